"""`python -m studies.im_screening`: measure the stages (the default), or only report on what the
results file holds (--report), measure the picks again per sentence (--paired), or price the powered studies
(--cost)."""

from __future__ import annotations

import argparse
from pathlib import Path

from studies.im_screening import __doc__ as ABOUT
from studies.im_screening.records import damping_vs_ex, ranked, read
from studies.im_screening.settings import N_TEXTS, ex_of

RESULTS = Path("docs") / "im_screening" / "results.jsonl"  # under the repository root
PAIRED = "paired.jsonl"  # beside it: the picks again, with per-sentence distances


def paired(results: Path, n: int) -> None:
    from studies.im_screening.measure import Screen
    from studies.im_screening.paired import paired_intervals

    picks = ranked({r["key"]: r for r in read(results)})[:3]
    screen = Screen(results.parent / PAIRED, n)
    for r in picks:
        screen.measure(ex_of(r["setting"]))
        screen.measure(r["setting"])
    for row in paired_intervals(screen.done, [screen.done[r["key"]] for r in picks]):
        print(
            f"{row['key']:45s} {row['perturbation']:5s} n {row['n']}: IM - EX {row['difference']:+.4f} "
            f"[{row['difference_95'][0]:+.4f}, {row['difference_95'][1]:+.4f}]  IM / EX {row['ratio']:.3f} "
            f"[{row['ratio_95'][0]:.3f}, {row['ratio_95'][1]:.3f}]"
        )


def cost(results: Path, benches: list[Path]) -> None:
    from studies.im_screening.cost import corrected_minutes

    done = {r["key"]: r for r in read(results)}

    def per_kind(minutes: dict) -> str:
        return ", ".join(f"{k} {v:.0f}" for k, v in minutes.items())

    for path in benches:
        c = corrected_minutes(path, done)
        listed, corrected = (sum(c[k].values()) / 60 for k in ("listed_minutes", "corrected_minutes"))
        unmeasured = c["unmeasured_im_methods"]
        print(
            f"{path}: {c['jobs']} jobs; --list: {listed:.1f} h ({per_kind(c['listed_minutes'])} min); "
            f"corrected: {corrected:.1f} h ({per_kind(c['corrected_minutes'])} min)"
            + (f"; IM cost not measured for {', '.join(unmeasured)}" if unmeasured else "")
        )


def report(results: Path) -> None:
    from studies.im_screening.plot import plot
    from studies.im_screening.tables import amplification_table, table

    done = {r["key"]: r for r in read(results)}
    print(table(done))
    print(
        "\npicked (converge, damp more than EX; best first):",
        ", ".join(f"{r['key']} ({damping_vs_ex(r, done):.3f})" for r in ranked(done)[:3]) or "none",
    )
    print("\nper-layer amplification (distance after the layer / before it):\n")
    print(amplification_table(done, ranked(done)[:3]))
    print(f"CPU seconds spent: {sum(r['total_cpu_s'] for r in done.values()):.0f}")
    plot(done, results.parent / "screening.png")


def main(argv: list[str] | None = None, root: Path = Path(".")) -> int:
    """`root`: the repository checkout (the default results file is under it)."""
    parser = argparse.ArgumentParser(description=ABOUT, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stages", default="ABC", help="which stages to run, e.g. A or ABC")
    parser.add_argument("--n", type=int, default=N_TEXTS, help="SST-2 dev sentences (the probe's seeded sample)")
    parser.add_argument("--results", type=Path, default=root / RESULTS)
    parser.add_argument("--report", action="store_true", help="print the table and write the plot; no measuring")
    parser.add_argument(
        "--cost",
        type=Path,
        nargs="+",
        metavar="BENCH.yaml",
        help="the bench's own estimate and one corrected with the measured IM cost",
    )
    parser.add_argument(
        "--paired",
        action="store_true",
        help="measure the picks and their EX controls again with per-sentence distances (into "
        "paired.jsonl) and print paired bootstrap intervals of IM against EX",
    )
    args = parser.parse_args(argv)
    if args.paired:
        paired(args.results, args.n)
    elif args.cost:
        cost(args.results, args.cost)
    elif args.report:
        report(args.results)
    else:
        from studies.im_screening.measure import Screen, run_stages

        run_stages(Screen(args.results, args.n), args.stages)
    return 0
