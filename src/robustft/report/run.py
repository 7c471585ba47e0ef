"""The `report` verb as plain functions: `report(cfg)` for a `ReportConfig` (what `robustft report` calls), and
`build_report(run_dirs, out_dir, ...)` with the settings as arguments (what the bench and publishing call)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from robustft.atomic import atomic_write_json, atomic_write_text
from robustft.config import ReportConfig
from robustft.errors import ConfigError
from robustft.report.folders import load_runs
from robustft.report.registry import claims_plots, render_markdown, report_tables
from robustft.report.rendering.html import EXAMPLES_PER_PAGE, MAX_EXAMPLES_PER_RUN, render_pages, write_html
from robustft.report.rendering.markdown import render_table
from robustft.report.rendering.plots import write_plots
from robustft.report.rendering.tables import overview_table
from robustft.report.summary import build_summary

MANIFEST = "report-files.json"  # the files the last build wrote: the only ones a build may replace or delete
# What a build may write or delete: report.md/json/html, the plots (plots.write_plots' names) and example pages
REPORT_NAMES = re.compile(
    r"report\.(md|json|html)|examples-\d{3,}\.html|(accuracy_\w+|paired_difference|training_size|probe|frontier)\.png"
)


def build_report(
    run_dirs: list[Path],
    out_dir: Path,
    baseline: str | None = None,
    bench_baseline: bool = False,
    title: str = "robustft report",
    plots: bool = True,
    html: bool = True,
    examples_per_run: int = MAX_EXAMPLES_PER_RUN,
    study: dict | None = None,
    examples_per_page: int = EXAMPLES_PER_PAGE,
) -> dict:
    """Read the run folders (or folders holding them), write report.json, report.md, the PNG plots and
    report.html (with the first `examples_per_run` attacked examples of each attack run on pages of
    `examples_per_page` beside it) into `out_dir`, and return the summary (the content of report.json).
    `bench_baseline` and `study`: `build_summary`'s."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    check_owned(out_dir)
    runs = load_runs([Path(p) for p in run_dirs])
    summary = build_summary(runs, baseline=baseline, bench_baseline=bench_baseline, study=study)
    names = write_plots(summary, out_dir) + claims_plots(summary, out_dir) if plots else []
    atomic_write_json(out_dir / "report.json", summary)
    atomic_write_text(out_dir / "report.md", render_markdown(summary, title=title, plots=names))
    if html:
        plot_files = {n: out_dir / n for n in names}
        tables = report_tables(summary, page=True)
        pages = write_html(
            out_dir, render_pages(summary, tables, runs, plot_files, title, examples_per_run, examples_per_page)
        )
        names += [page.name for page in pages]
    atomic_write_json(out_dir / MANIFEST, sorted({*names, "report.json", "report.md"}))
    return summary


def check_owned(out_dir: Path) -> None:
    """Refuse, naming it, a file in `out_dir` that a build would replace or delete (report.*, a plot's or an
    example page's name) but that no build wrote: one not in the manifest. A folder built before manifests were
    kept (a report.json of robustft's, no manifest) counts as built."""
    manifest, summary = out_dir / MANIFEST, out_dir / "report.json"
    if manifest.is_file():
        owned = set(json.loads(manifest.read_text(encoding="utf-8")))
    elif summary.is_file() and "robustft_report" in summary.read_text(encoding="utf-8"):
        return
    else:
        owned = set()
    foreign = sorted(p.name for p in out_dir.iterdir() if REPORT_NAMES.fullmatch(p.name) and p.name not in owned)
    if foreign:
        raise ConfigError(
            f"output_dir: {out_dir} holds {', '.join(foreign)}, which this report would replace or delete but did not "
            f"write: choose another folder, or move them out"
        )


def report(cfg: ReportConfig) -> dict:
    """The report `cfg` describes, written into `cfg.output_dir`; returns the summary (report.json's content)."""
    if not cfg.runs:
        raise ConfigError("runs: name at least one run folder (robustft report RUN_DIR... or --runs DIR)")
    return build_report(
        [Path(str(p)) for p in cfg.runs],
        Path(cfg.output_dir),
        baseline=cfg.baseline,
        title=cfg.title,
        plots=cfg.plots,
        html=cfg.html,
        examples_per_run=cfg.examples_per_run,
    )


def overview(summary: dict) -> str:
    """The overview table (one row per method) as Markdown: what the commands print when a report is built."""
    return render_table(overview_table(summary))


def written_files(cfg: ReportConfig) -> list[Path]:
    """The files `report(cfg)` writes besides the plots."""
    out = Path(cfg.output_dir)
    return [out / "report.md", out / "report.json"] + ([out / "report.html"] if cfg.html else [])
