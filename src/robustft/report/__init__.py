"""`robustft report`: Markdown, JSON, PNG plots and HTML pages (report.html, its examples beside it), from run folders.

folders.py       reading run folders, the report's only input
method_keys.py   which trained model (method and seed) a run concerns, and its label
run_accuracy.py  each run's accuracy with n and intervals, and its per-example outcomes for pairing
summary.py       the report's content as one dict (report.json): methods, evaluations, paired comparisons
certified.py     the certified accuracy of `eval --certify` runs (report.json's `certified`)
claims/          paper knowledge as plug-ins (claims/plugin.py): claims and verdict rules, anchors, deviations
registry.py      the plug-ins a report runs, found there and never imported by name by the summary or rendering
rendering/       generic rendering (no paper's name): tables, Markdown, HTML pages, plots, the browser check
run.py           `report(cfg)` (the CLI verb) and `build_report(run_dirs, out_dir, ...)` (the Python API)

Publishing a bench's results as data (docs/results, docs/RESULTS.md) needs the bench, which builds its report with
this package: it is the repository's `studies/`, outside the package; `robustft.results` re-checks what it wrote.
"""

from robustft.report.run import build_report, report

__all__ = ["build_report", "report"]
