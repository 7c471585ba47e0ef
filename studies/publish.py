"""Publish bench results as data: save every started job of runs/bench/<preset> into docs/results/<preset>/runs/
(`robustft bench save`: summaries and gzipped per-example lines, no models; a bench still running saves its
finished and partial jobs, and `robustft bench restore <preset> docs/results/<preset>/runs` goes on from them on a
fresh checkout), rebuild that preset's report there from its finished jobs (report.md, report.json and the plots;
report.html is rebuilt by `robustft report`, never committed), and regenerate docs/RESULTS.md from every published
preset (never from hand-copied numbers).

    python -m studies.publish quick [configs/im-powered.yaml ...] [--bench_root runs/bench]
    python -m studies.publish --rebuild [--html]     every published report from its committed runs

(run from the repository root.)
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from robustft import runtime
from robustft.atomic import atomic_write_json
from robustft.bench import carry
from robustft.bench.costs import expected_seconds, measured_seconds
from robustft.bench.matrix import bench_dir, expand
from robustft.bench.presets import bench_config
from robustft.errors import ConfigError
from robustft.report.run import build_report
from robustft.results import report_inputs, study_standing
from robustft.runs import is_finished, read_description, read_metrics
from studies.definitions import study_of
from studies.results_page import write_pages

RESULTS = Path("docs") / "results"  # under the repository root
RESULTS_PAGE = Path("docs") / "RESULTS.md"
UNRECORDED = "machines not recorded (jobs run before run folders recorded theirs, 2026-12-02)"


def machines(described: list[dict]) -> str:
    """What the finished jobs ran on (each records its machine in config.json), with how many jobs each, so that runs
    from different machines are told apart; jobs from before that record are counted as such."""
    counts = Counter(
        runtime.describe_machine(about["machine"]) if "machine" in about else UNRECORDED for about in described
    )
    if not counts:
        return "no machine yet (no job finished)"
    if len(counts) == 1:
        return next(iter(counts))
    return "; ".join(f"{name} ({n} job{'s' if n > 1 else ''})" for name, n in counts.most_common())


def estimate_vs_actual(jobs: list) -> dict[str, dict]:
    """The bench's estimate against each finished training's and attack's own minutes, summed by kind (attacks by
    recipe, IM models apart): how far the printed expected wall time can be trusted."""
    arch = {j.id: j.config.arch for j in jobs if j.kind == "train"}
    finished = [j for j in jobs if j.kind != "eval" and is_finished(j.folder)]
    out: dict[str, list] = {}
    for job, expected in zip(finished, expected_seconds(finished, jobs), strict=True):
        kind = f"attack {job.config.recipe}" if job.kind == "attack" else job.kind
        entry = out.setdefault(f"{kind}{' (IM)' if arch.get(job.cell) == 'im' else ''}", [0, 0.0, 0.0])
        entry[0], entry[1], entry[2] = entry[0] + 1, entry[1] + expected, entry[2] + measured_seconds(job.folder)
    return {
        k: {"jobs": n, "expected_minutes": round(e / 60, 1), "actual_minutes": round(a / 60, 1)}
        for k, (n, e, a) in sorted(out.items())
    }


def published_description(spec: str, cfg, jobs: list, finished: list[Path], bench: Path, conditions: str) -> dict:
    """published.json: how the preset ran (command, progress, times, machines, code) and how its report is built."""
    described = [read_description(folder) or {} for folder in finished]  # each job's config.json
    last_call = read_metrics(bench) or {}  # the last `robustft bench` call's (absent while one runs)
    ran = json.loads((bench / "config.json").read_text(encoding="utf-8"))["versions"]
    return {
        "command": f"robustft bench {spec}",
        "jobs": len(jobs),
        "finished": len(finished),
        "wall_minutes": round(last_call["wall_s"] / 60, 1) if last_call.get("complete") else None,
        "compute_minutes": round(sum(measured_seconds(f) for f in finished) / 60, 1),
        "expected_minutes": round(sum(expected_seconds(jobs, jobs)) / 60, 1),
        "estimate_vs_actual": estimate_vs_actual(jobs),
        "machine": machines(described),
        "git_commit": (ran.get("git_commit") or "unknown")[:7],  # the code the bench ran, not today's checkout
        "job_commits": len({(about.get("versions") or {}).get("git_commit") for about in described}),
        "conditions": conditions,
        "report_with": cfg.report_with,  # whose published runs its report also reads
        "baseline": cfg.baseline,  # the method its report compares every other with, paired
        # what its settings registered (studies/definitions.py), read back by robustft.results.study_standing
        "comparisons": [list(pair) for pair in study_of(cfg.name).comparisons],
        "frontier_studies": dict(study_of(cfg.name).frontier_studies),
    }


def publish(spec: str, bench_root: Path, conditions: str = "", results_root: Path = RESULTS) -> None:
    """Save the bench `spec` (a preset name or a bench config file, as given to `robustft bench`) from
    `bench_root` into `results_root`/<name>, with its published.json and its report."""
    cfg = bench_config(spec)
    cfg.output_dir = str(Path(bench_root) / cfg.name)
    jobs = expand(cfg)
    bench, target = bench_dir(cfg), Path(results_root) / cfg.name
    inputs = report_inputs(target, cfg.report_with)
    unpublished = [str(p) for p in inputs[1:] if not p.is_dir()]
    if unpublished:
        raise ConfigError(f"{spec}: report_with names {', '.join(unpublished)}, not published: publish it first")
    finished = [j.folder for j in jobs if is_finished(j.folder)]
    if not finished:  # its partial jobs are trainings, whose models are not saved: nothing to carry or report yet
        print(f"{spec}: no job finished yet, nothing published")
        return
    saved = carry.save(jobs, bench, target / "runs")
    atomic_write_json(target / "published.json", published_description(spec, cfg, jobs, finished, bench, conditions))
    rebuild(target)
    print(f"published {saved['finished']} finished and {saved['partial']} partial jobs of {bench} into {target}")


def rebuild(target: Path, html: bool = False) -> None:
    """A published preset's report (report.json, report.md, plots; report.html with `html`) from its committed
    runs, with the baseline and standing its published.json records: what tests/test_results.py re-checks."""
    about = json.loads((target / "published.json").read_text(encoding="utf-8"))
    study = study_standing(about, (target / "runs").is_dir())
    title = f"robustft bench {target.name}"
    inputs = report_inputs(target, about.get("report_with", []))
    build_report(
        inputs, target, baseline=about.get("baseline"), bench_baseline=True, title=title, html=html, study=study
    )


def main(argv: list[str] | None = None, root: Path = Path(".")) -> int:
    """`root`: the repository checkout (docs/results, docs/RESULTS.md and the default runs/bench are under it)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("presets", nargs="*", help="preset names or bench config files")
    parser.add_argument("--bench_root", type=Path, default=root / "runs" / "bench")
    parser.add_argument("--conditions", default="", help="what else the machine ran meanwhile (the wall time's caveat)")
    parser.add_argument(
        "--rebuild", action="store_true", help="rebuild every published preset's report from its committed runs"
    )
    parser.add_argument("--html", action="store_true", help="with --rebuild: also write each report.html")
    args = parser.parse_args(argv)
    if not args.presets and not args.rebuild:
        parser.error("name the presets to publish, or --rebuild")
    for preset in args.presets:
        publish(preset, args.bench_root, args.conditions, results_root=root / RESULTS)
    if args.rebuild:
        for target in sorted(p for p in (root / RESULTS).iterdir() if (p / "runs").is_dir()):
            rebuild(target, html=args.html)
            print(f"rebuilt {target}")
    for path in write_pages(root / RESULTS, root / RESULTS_PAGE):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
