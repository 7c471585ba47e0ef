"""The registered extension of a frontier study (configs/rift-frontier-sst2.yaml, rule 3): for each frontier, the
two strengths whose seed-0 dev accuracy brackets RIFT's mean dev accuracy are trained again with seeds 1 and 2, so
the matched-clean interval carries the frontier's own seed spread. The choice reads dev accuracy only (never the
test split or an attack), so it cannot be steered by the numbers it is to judge.

    python -m studies.frontier_seeds configs/rift-frontier-sst2.yaml RUNS... > seeds.yaml
    robustft bench seeds.yaml --list        # the jobs it adds, nothing trained
    robustft bench seeds.yaml --workers 2 --threads 1

The config written is the study's own (cells and evaluations) named `<study>-seeds`, with `seeds: [1, 2]` and only
the chosen strengths the study itself trains, so its jobs get a bench folder of their own; add its name to the
study's `report_with` so that the study's report reads them. A chosen strength trained by another study (the
default, in rift-1000) is named in its header with the seeds it has.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import yaml

from robustft.evaluation.frontier import bracketing_strengths
from robustft.evaluation.intervals import StatisticsInputError
from robustft.report.claims.rift import is_rift
from robustft.report.claims.rift_frontier import FRONTIER_SEED, frontiers

EXTENSION_SEEDS = [1, 2]  # the registered extension: seeds 1 and 2 beside every strength's seed 0


def _dev(summary: dict, task: str) -> dict | None:
    return next(
        (ev for ev in summary["evaluations"] if ev["kind"] == "clean" and ev["task"] == task and ev["split"] == "dev"),
        None,
    )


def _accuracies(ev: dict, label: str) -> dict[str, float]:
    row = next((r for r in ev["rows"] if r["method"] == label), None) or {}
    return {s["seed"]: s["accuracy"] for s in row.get("seeds", []) if s.get("accuracy") is not None}


def choose(summary: dict) -> list[dict]:
    """Per RIFT method and frontier: RIFT's mean dev accuracy, each strength's seed-0 dev accuracy and the two
    strengths that bracket it ("strengths": None where every strength lies on one side, or a strength has no
    seed-0 dev result yet: "missing")."""
    out, methods = [], summary["methods"]
    for rift, m in methods.items():
        ev = _dev(summary, m["task"]) if is_rift(m) else None
        rift_dev = _accuracies(ev, rift) if ev else {}
        if not rift_dev:
            continue
        target = float(np.mean(list(rift_dev.values())))
        for f in frontiers(methods):
            if methods[f["labels"][0]]["task"] != m["task"]:
                continue
            dev = {label: _accuracies(ev, label).get(FRONTIER_SEED) for label in f["labels"]}
            missing = [label for label, acc in dev.items() if acc is None]
            chosen = None if missing else bracketing_strengths(dev, target)
            out.append(
                {
                    "rift": rift,
                    "frontier": f"{f['name']} ({f['knob']})",
                    "rift_dev": target,
                    "dev": dev,
                    "missing": missing,
                    "strengths": list(chosen) if chosen else None,
                    "seeds_now": {label: methods[label]["seeds"] for label in f["labels"]},
                }
            )
    return out


def extension_config(study: dict, choices: list[dict]) -> tuple[dict, list[str]]:
    """The bench config that trains the chosen strengths of the study's own methods with seeds 1 and 2, and notes
    on the chosen strengths it cannot add (trained by another study, or without a bracketing pair)."""
    wanted = [f"s{s}" for s in EXTENSION_SEEDS]
    labels, notes = [], []
    for c in choices:
        if c["strengths"] is None:
            why = f"no seed-0 dev result yet for {', '.join(c['missing'])}" if c["missing"] else "none brackets it"
            notes.append(f"{c['frontier']}: RIFT's mean dev accuracy {100 * c['rift_dev']:.1f}%: {why}")
            continue
        for label in c["strengths"]:
            if label in study["methods"]:
                labels.append(label)
            elif not set(wanted) <= set(c["seeds_now"][label]):
                notes.append(f"{c['frontier']}: {label} is not this study's; it has seeds {c['seeds_now'][label]}")
    labels = list(dict.fromkeys(labels))
    if not labels:
        raise StatisticsInputError("no chosen strength is trained by this study: nothing to add")
    config = {k: v for k, v in study.items() if k not in ("methods", "seeds", "baseline", "report_with")}
    # its own bench folder (a bench refuses a folder holding another config); the study reports with it
    config |= {"name": f"{study['name']}-seeds", "seeds": list(EXTENSION_SEEDS), "baseline": labels[0]}
    config["methods"] = {label: study["methods"][label] for label in labels}
    return config, notes


def main(argv: list[str] | None = None) -> int:
    from robustft.bench.presets import bench_config
    from robustft.report.folders import load_runs
    from robustft.report.summary import build_summary

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("config", help="the frontier study's bench config (YAML)")
    parser.add_argument("runs", nargs="+", help="run folders: the study's and those it reports with")
    args = parser.parse_args(argv)
    study = yaml.safe_load(Path(args.config).read_text(encoding="utf-8"))
    bench_config(args.config)  # a config robustft cannot read is an error here, not after the choice
    summary = build_summary(load_runs([Path(r) for r in args.runs]), study.get("baseline"), bench_baseline=True)
    choices = choose(summary)
    config, notes = extension_config(study, choices)
    head = [f"# Registered extension of {args.config} (rule 3), chosen on dev only:"]
    for c in choices:
        dev = ", ".join(f"{label} {100 * a:.1f}" if a is not None else f"{label} -" for label, a in c["dev"].items())
        head.append(f"#   {c['frontier']}: RIFT dev {100 * c['rift_dev']:.1f}%; seed-0 dev {dev}; -> {c['strengths']}")
    head += [f"#   not added: {n}" for n in notes]
    sys.stdout.write("\n".join(head) + "\n" + yaml.safe_dump(config, sort_keys=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
