"""`robustft report`: Markdown, JSON, PNG plots and one self-contained HTML page, generated only from run
folders. `build_report(run_dirs, out_dir)` is the Python API; `robustft.report.command` the CLI verb."""

from __future__ import annotations

from pathlib import Path

__all__ = ["build_report"]


def build_report(
    run_dirs: list[Path],
    out_dir: Path,
    baseline: str | None = None,
    bench_baseline: bool = False,
    title: str = "robustft report",
    plots: bool = True,
    html: bool = True,
    examples_per_run: int = 200,
) -> dict:
    """Read the run folders (or folders holding them), write report.json, report.md, the PNG plots and
    report.html (with the first `examples_per_run` attacked examples of each attack run) into `out_dir`, and
    return the summary (the content of report.json). `bench_baseline`: `build_summary`'s."""
    from robustft.atomic import atomic_write_json, atomic_write_text
    from robustft.report.folders import load_runs
    from robustft.report.html import render_html
    from robustft.report.markdown import render_markdown
    from robustft.report.plots import write_plots
    from robustft.report.summary import build_summary

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    runs = load_runs([Path(p) for p in run_dirs])
    summary = build_summary(runs, baseline=baseline, bench_baseline=bench_baseline)
    names = write_plots(summary, out_dir) if plots else []
    atomic_write_json(out_dir / "report.json", summary)
    atomic_write_text(out_dir / "report.md", render_markdown(summary, title=title, plots=names))
    if html:
        atomic_write_text(
            out_dir / "report.html",
            render_html(
                summary, runs, {n: out_dir / n for n in names}, title=title, max_examples_per_run=examples_per_run
            ),
        )
    return summary
