"""Do attack outcomes survive a speed change? Attack runs of one model on the same fixed examples, compared paired
with a reference run (e.g. bf16 against fp32, or one LM-filter scorer against the other).

Each run is a `robustft attack` folder; examples are paired by id, over the examples every run has attacked
(an unfinished run, e.g. one started with `--first K`, counts with what it has; the JSON says so). Reported per
run: accuracy under attack and success rate with n and 95% intervals, seconds per example; against the
reference: the paired difference in accuracy under attack (bootstrap interval, exact McNemar test), how many
examples end in the same result, and whether the run's accuracy under attack lies inside the reference's 95%
interval (the adoption rule of docs/performance.md). A success found below fp32 that fp32 does not confirm is
attacked again in fp32 by the attack itself (`recheck_full_precision`); how many were is reported.

    robustft attack --model RUN --recipe pwws -n 1000 --split test --precision fp32 --output_dir runs/outcomes/pwws-fp32
    robustft attack --model RUN --recipe pwws -n 1000 --split test --precision bf16 --output_dir runs/outcomes/pwws-bf16
    python benchmarks/attack_outcomes.py --name attack_outcomes_pwws1000 \
        --runs fp32=runs/outcomes/pwws-fp32 bf16=runs/outcomes/pwws-bf16
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import save  # noqa: E402
from robustft.attacks.results import FAILED, SKIPPED, SUCCEEDED, AttackRecord  # noqa: E402
from robustft.evaluation.stats import accuracy_from_counts, paired_comparison  # noqa: E402
from robustft.report.folders import load_run  # noqa: E402

OVERTURNED = "not confirmed in fp32"


def read_run(folder: Path) -> tuple[dict, dict[str, AttackRecord]]:
    """The report's reader: it also takes a killed run's half-written last line (a partial run) and gzipped lines."""
    run = load_run(folder, folder)
    if run.verb != "attack" or run.examples is None:
        raise SystemExit(f"{folder}: not an attack run folder with examples")
    records = [AttackRecord.from_dict(r) for r in run.examples]
    return {"config": run.config, "metrics": run.metrics}, {r.id: r for r in records}


def run_figures(records: list[AttackRecord], wall_seconds: float | None) -> dict:
    n = len(records)
    succeeded = sum(r.result == SUCCEEDED for r in records)
    failed = sum(r.result == FAILED for r in records)
    return {
        "n": n,
        "skipped": sum(r.result == SKIPPED for r in records),
        "accuracy_under_attack": accuracy_from_counts(failed, n),
        "success_rate": accuracy_from_counts(succeeded, succeeded + failed),
        "seconds_per_example": sum(r.seconds for r in records) / n,
        "wall_seconds": wall_seconds,
        "overturned_in_fp32": sum(OVERTURNED in r.reason for r in records),
    }


def compare(
    reference: list[AttackRecord], reference_ci95: list[float], other: list[AttackRecord], names: tuple[str, str]
) -> dict:
    paired = paired_comparison(
        [r.result == FAILED for r in other], [r.result == FAILED for r in reference], names=names
    )
    same_result = sum(a.result == b.result for a, b in zip(reference, other, strict=True))
    same_text = sum(a.adversarial == b.adversarial for a, b in zip(reference, other, strict=True))
    low, high = reference_ci95
    robust = paired["accuracy_a"]
    return {
        "accuracy_under_attack_difference": paired,
        "same_result": same_result / len(reference),
        "same_adversarial_text": same_text / len(reference),
        "inside_reference_interval": low <= robust <= high,
        "seconds_ratio": sum(r.seconds for r in other) / sum(r.seconds for r in reference),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", nargs="+", required=True, help="label=attack run folder; the first is the reference")
    parser.add_argument("--name", required=True, help="benchmarks/results/<name>.json")
    args = parser.parse_args(argv)

    labelled = []
    for item in args.runs:
        label, sep, folder = item.partition("=")
        if not sep or not label or not folder:
            parser.error(f"--runs takes label=folder, got {item!r}")
        labelled.append((label, Path(folder)))
    loaded = [(label, folder, *read_run(folder)) for label, folder in labelled]
    ref_label, _, _, ref_records = loaded[0]
    ids = sorted(set.intersection(*(set(records) for *_, records in loaded)))
    if not ids:
        raise SystemExit("the runs have no attacked example in common")
    complete = all(meta["metrics"].get("complete") and len(records) == len(ids) for _, _, meta, records in loaded)
    if not complete:
        print(f"partial: compared on the {len(ids)} examples every run has attacked")

    out = {"reference": ref_label, "examples_compared": len(ids), "all_runs_complete": complete}
    out.update({"runs": {}, "compared": {}})
    reference = [ref_records[i] for i in ids]
    print(f"{'run':<14}{'n':>6}{'acc under attack':>26}{'success rate':>26}{'s/ex':>8}{'overturned':>12}")
    for label, folder, meta, records in loaded:
        ordered = [records[i] for i in ids]
        figures = run_figures(ordered, meta["metrics"].get("wall_seconds_this_session"))
        out["runs"][label] = {"folder": str(folder), "config": meta["config"], **figures}
        acc, rate = figures["accuracy_under_attack"], figures["success_rate"]
        print(
            f"{label:<14}{figures['n']:>6}"
            f"{100 * acc['accuracy']:>9.1f} [{100 * acc['ci95'][0]:.1f}, {100 * acc['ci95'][1]:.1f}]"
            f"{100 * rate['accuracy']:>11.1f} [{100 * rate['ci95'][0]:.1f}, {100 * rate['ci95'][1]:.1f}]"
            f"{figures['seconds_per_example']:>8.3f}{figures['overturned_in_fp32']:>12}"
        )
        if label != ref_label:
            reference_ci95 = out["runs"][ref_label]["accuracy_under_attack"]["ci95"]
            result = compare(reference, reference_ci95, ordered, (label, ref_label))
            out["compared"][label] = result
            d = result["accuracy_under_attack_difference"]
            print(
                f"  {label} - {ref_label}: {100 * d['difference']:+.1f} points "
                f"[{100 * d['ci95'][0]:+.1f}, {100 * d['ci95'][1]:+.1f}], McNemar p={d['p_value']:.3f} "
                f"({d['verdict']}); same result {100 * result['same_result']:.1f}%, same text "
                f"{100 * result['same_adversarial_text']:.1f}%, inside the reference's interval: "
                f"{result['inside_reference_interval']}; time x{result['seconds_ratio']:.2f}"
            )
    save(args.name, {"command": "python benchmarks/attack_outcomes.py " + " ".join(sys.argv[1:]), **out})


if __name__ == "__main__":
    main()
