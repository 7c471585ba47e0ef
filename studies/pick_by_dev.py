"""Pick one of a bench's methods by its selection data only: the mean over training seeds of each finished cell's
best dev accuracy (the split its config selects epochs on, e.g. subset-dev), never a test, attack or AdvGLUE set.
Refuses while a seed of a candidate is unfinished. Ties go to the candidate named first.

    python -m studies.pick_by_dev configs/im-powered.yaml im-inc-dt1 im-inc-dt05 \
        [--write configs/im-advglue.yaml]                       (from the repository root)

(issue 14: the IM setting of the five-task AdvGLUE comparison.) `--write` turns the pick into that comparison's
bench: the same backbone, training, precision and seeds, the baseline and the picked method with their specs
unchanged, on the other four AdvGLUE tasks (their GLUE subsets), evaluated on dev and AdvGLUE, no attacks; its
SST-2 models are the source bench's, and its report reads both (`report_with`). An existing file is never replaced.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import yaml

from robustft import runs
from robustft.bench.matrix import ADVGLUE_SPLITS, expand
from robustft.bench.presets import bench_config
from robustft.config import read_config_file
from robustft.errors import ConfigError


def dev_accuracies(bench_file: str, labels: list[str]) -> dict[str, dict[int, float]]:
    """{label: {seed: best dev accuracy}} over the bench's training cells of those methods."""
    cfg = bench_config(bench_file).validate()
    found: dict[str, dict[int, float]] = {label: {} for label in labels}
    for job in expand(cfg):
        if job.kind != "train" or job.method not in found:
            continue
        if not runs.is_finished(job.folder):
            raise ConfigError(f"{job.id} is not finished: pick once every seed of {', '.join(labels)} is")
        metrics = json.loads((job.folder / "metrics.json").read_text(encoding="utf-8"))
        found[job.method][job.config.seed] = metrics["best"]["dev_accuracy"]
    missing = [label for label, seeds in found.items() if not seeds]
    if missing:
        raise ConfigError(f"no training cell of {', '.join(missing)} in {bench_file}")
    return found


def pick(found: dict[str, dict[int, float]]) -> str:
    return max(found, key=lambda label: (statistics.mean(found[label].values()), -list(found).index(label)))


def write_comparison(bench_file: str, picked: str, found: dict[str, dict[int, float]], out: Path) -> None:
    """The five-task AdvGLUE bench of the source's baseline and `picked`, with how the pick was made on top."""
    if out.exists():
        raise ConfigError(f"--write: {out} exists; the comparison it holds may have run: move it away to write anew")
    source, cfg = read_config_file(bench_file), bench_config(bench_file)
    tasks = [t for t in ADVGLUE_SPLITS if t not in cfg.tasks]
    config = {
        **{k: v for k, v in source.items() if k not in ("attacks", "output_dir")},
        "name": out.stem,  # its own bench folder
        "tasks": tasks,
        "methods": {label: cfg.methods[label] or {} for label in (cfg.baseline, picked)},
        "evals": [{"task": "{task}", "split": "dev"}, {"advglue": True}],
        "report_with": [cfg.name],  # its SST-2 models and their AdvGLUE evaluations
    }
    means = "; ".join(f"{label} {100 * statistics.mean(seeds.values()):.2f}%" for label, seeds in found.items())
    dev = source.get("train", {}).get("dev_split", "dev")
    header = (
        f"# Written by studies.pick_by_dev from {bench_file}: the AdvGLUE comparison on\n"
        f"# {', '.join(tasks)}.\n"
        f"# {picked} was picked by its mean best {dev} accuracy over the seeds ({means}), never an evaluation\n"
        f"# set. Its {', '.join(cfg.tasks)} models are that bench's, whose runs its report also reads (report_with).\n"
    )
    out.write_text(header + yaml.safe_dump(config, sort_keys=False), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bench_file")
    parser.add_argument("labels", nargs="+", help="the candidate methods, in order of preference on a tie")
    parser.add_argument("--write", type=Path, help="write the five-task AdvGLUE bench of the pick to this file")
    args = parser.parse_args(argv)
    try:
        found = dev_accuracies(args.bench_file, args.labels)
        for label, seeds in found.items():
            per_seed = ", ".join(f"s{s} {100 * a:.2f}" for s, a in sorted(seeds.items()))
            print(f"{label}: mean {100 * statistics.mean(seeds.values()):.2f}% over {len(seeds)} seeds ({per_seed})")
        print(f"picked: {pick(found)}")
        if args.write:
            write_comparison(args.bench_file, pick(found), found, args.write)
            print(f"wrote {args.write}")
    except ConfigError as exc:
        print(f"pick_by_dev: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
