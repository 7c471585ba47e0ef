"""Pick one of a bench's methods by its selection data only: the mean over training seeds of each finished cell's
best dev accuracy (the split its config selects epochs on, e.g. subset-dev), never a test, attack or AdvGLUE set.
Refuses while a seed of a candidate is unfinished. Ties go to the candidate named first.

    python scripts/pick_by_dev.py configs/im-powered.yaml im-inc-dt1 im-inc-dt05

(issue 14: the IM setting of the five-task AdvGLUE comparison.)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

from robustft import runs
from robustft.bench.matrix import expand
from robustft.bench.presets import bench_config
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bench_file")
    parser.add_argument("labels", nargs="+", help="the candidate methods, in order of preference on a tie")
    args = parser.parse_args(argv)
    try:
        found = dev_accuracies(args.bench_file, args.labels)
    except ConfigError as exc:
        print(f"pick_by_dev: {exc}", file=sys.stderr)
        return 2
    for label, seeds in found.items():
        per_seed = ", ".join(f"s{s} {100 * a:.2f}" for s, a in sorted(seeds.items()))
        print(f"{label}: mean {100 * statistics.mean(seeds.values()):.2f}% over {len(seeds)} seeds ({per_seed})")
    print(f"picked: {pick(found)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
