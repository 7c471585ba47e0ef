"""Publish bench results as data: export every finished run of runs/bench/<preset> into
docs/results/<preset>/runs/ (summaries and gzipped per-example lines; no models), rebuild that preset's report
there, and regenerate docs/RESULTS.md from every published preset (never from hand-copied numbers).

    python scripts/publish_results.py quick [advglue ...] [--bench_root runs/bench]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
from pathlib import Path

from robustft.atomic import atomic_write_json, atomic_write_text
from robustft.report import build_report
from robustft.report.folders import find_run_folders
from robustft.report.results import export_run, render_results_page
from robustft.runs import is_finished

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results"


def job_seconds(folder: Path) -> float:
    """A finished job's own compute time, summed over the sessions it ran in: training's accumulated time, or an
    attack's per-example seconds (its summary's mean over every record; evaluations record none, they take
    seconds)."""
    metrics = json.loads((folder / "metrics.json").read_text(encoding="utf-8"))
    if "train_time_s" in metrics:
        return float(metrics["train_time_s"])
    if metrics.get("avg_seconds_per_example") is not None:
        return metrics["avg_seconds_per_example"] * (metrics["num_examples"] + metrics["num_errors"])
    return 0.0


def publish(preset: str, bench_root: Path, conditions: str) -> None:
    bench = bench_root / preset
    metrics = json.loads((bench / "metrics.json").read_text(encoding="utf-8"))
    target = RESULTS / preset
    runs = [f for f in find_run_folders([bench / "cells"]) if is_finished(f)]
    for folder in runs:
        export_run(folder, target / "runs" / "--".join(folder.relative_to(bench / "cells").parts))
    build_report([target / "runs"], target, title=f"robustft bench {preset}")
    ran = json.loads((bench / "config.json").read_text(encoding="utf-8"))["versions"]
    commit = (ran.get("git_commit") or "unknown")[:7]  # the code the bench ran, not today's checkout
    config_file = f"configs/{preset}.yaml"  # a bench from a config file, not a built-in preset
    atomic_write_json(
        target / "published.json",
        {
            "command": f"robustft bench {config_file if (ROOT / config_file).exists() else preset}",
            "jobs": len(metrics["jobs"]),
            "wall_minutes": round(metrics["wall_s"] / 60, 1),
            "compute_minutes": round(sum(job_seconds(f) for f in runs) / 60, 1),
            "expected_minutes": round(metrics["expected_s"] / 60, 1),
            "machine": f"{os.cpu_count()} CPU cores ({platform.machine()}), no GPU",
            "git_commit": commit,
            "conditions": conditions,
        },
    )
    print(f"published {len(runs)} runs of {bench} into {target}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("presets", nargs="+")
    parser.add_argument("--bench_root", type=Path, default=ROOT / "runs" / "bench")
    parser.add_argument("--conditions", default="", help="what else the machine ran meanwhile (the wall time's caveat)")
    args = parser.parse_args()
    for preset in args.presets:
        publish(preset, args.bench_root, args.conditions)
    atomic_write_text(ROOT / "docs" / "RESULTS.md", render_results_page(RESULTS))
    print(f"wrote {ROOT / 'docs' / 'RESULTS.md'}")


if __name__ == "__main__":
    main()
