"""`robustft report RUN_DIR...`: tables, JSON, plots and an HTML page from run folders."""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = """Build a report from run folders (train, eval, attack, probe; or folders that hold them, such as a
bench output): report.md (Markdown tables), report.json, PNG plots and one self-contained report.html
with the adversarial examples. Every accuracy with n and a 95% interval; every method compared paired
with its baseline on the same examples (bootstrap interval of the difference, exact McNemar test).

examples:
  robustft report runs/bench/quick --output_dir reports/quick
  robustft report runs/train-a runs/eval-a runs/attack-a --baseline plain+standard --output_dir report/
"""


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "report",
        help="tables, plots and an HTML page from run folders",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("runs", nargs="+", metavar="RUN_DIR", help="run folders, or folders that hold run folders")
    p.add_argument("--output_dir", "--out", dest="out", default="report", help="output folder (default: report/)")
    p.add_argument(
        "--baseline",
        default=None,
        help="method label to compare every method with (default: plain+standard of the same model, "
        "task and training size)",
    )
    p.add_argument("--title", default="robustft report")
    p.add_argument(
        "--no_plots",
        "--no-plots",
        dest="no_plots",
        action="store_true",
        help="skip the PNG plots (no matplotlib needed)",
    )
    p.add_argument(
        "--examples_per_run",
        "--examples-per-run",
        dest="examples_per_run",
        type=int,
        default=200,
        help="attacked examples of each attack run shown in report.html (the first by index)",
    )
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    from robustft.report import build_report
    from robustft.report.markdown import render_table
    from robustft.report.tables import overview_table

    out = Path(args.out)
    summary = build_report(
        [Path(p) for p in args.runs],
        out,
        baseline=args.baseline,
        title=args.title,
        plots=not args.no_plots,
        examples_per_run=args.examples_per_run,
    )
    print(render_table(overview_table(summary)))
    print(f"report: {out / 'report.md'}, {out / 'report.json'}, {out / 'report.html'}")
    return 0
