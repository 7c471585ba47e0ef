"""report.html and its example pages: the first page holds the tables, the plots (as data URIs) and an index of the
adversarial examples, which sit on pages of their own beside it (rendering/examples.py), so the first page stays
small however many examples a study attacked. Every page inlines its CSS and scripts and loads nothing from
anywhere; everything from the runs is escaped."""

from __future__ import annotations

import base64
import re
from pathlib import Path

from robustft.atomic import atomic_write_text
from robustft.report.folders import Run
from robustft.report.rendering.examples import (
    EXAMPLES_PER_PAGE,
    MAX_EXAMPLES_PER_RUN,
    collect,
    example_page,
    index_html,
    page_name,
    paginate,
)
from robustft.report.rendering.page_shell import escape
from robustft.report.rendering.page_shell import page as page_frame
from robustft.report.rendering.tables import Table

__all__ = ["EXAMPLES_PER_PAGE", "MAX_EXAMPLES_PER_RUN", "render_pages", "write_html"]
EXAMPLE_PAGE = re.compile(r"examples-\d{3,}\.html")


def _table_html(table: Table) -> str:
    head = "".join(f"<th>{escape(c)}</th>" for c in table.columns)
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in table.rows)
    caption = f"<caption>{escape(table.caption)}</caption>" if table.caption else ""
    notes = "".join(f'<p class="note">{escape(n)}</p>' for n in table.notes)
    content = (
        f'<table data-section="{escape(table.section)}">{caption}<thead><tr>{head}</tr></thead><tbody>{body}</tbody>'
        "</table>"
        if table.rows
        else "<p>(none)</p>"
    )
    return f"<h3>{escape(table.title)}</h3>{content}{notes}"


def _figures(plots: dict[str, Path]) -> str:
    return "".join(
        f'<figure><img alt="{escape(name)}" src="data:image/png;base64,'
        f'{base64.b64encode(path.read_bytes()).decode("ascii")}"><figcaption class="note">{escape(name)}</figcaption>'
        "</figure>"
        for name, path in plots.items()
    )


def render_pages(
    summary: dict,
    tables: list[Table],
    runs: list[Run],
    plots: dict[str, Path],
    title: str = "robustft report",
    max_examples_per_run: int = MAX_EXAMPLES_PER_RUN,
    examples_per_page: int = EXAMPLES_PER_PAGE,
) -> dict[str, str]:
    """{file name: HTML}: report.html (`tables`: the page's, in order), then examples-001.html, ... in order."""
    method_of_run = {r["name"]: (r["method"] or "-", r["seed"] or "-") for r in summary["runs"]}
    groups = collect(runs, method_of_run, max_examples_per_run)
    pages = paginate(groups, examples_per_page)
    header = (
        f"<h1>{escape(title)}</h1>"
        f"<p>{len(summary['runs'])} run folders. Accuracies in % with 95% intervals and n; comparisons paired on the "
        "same examples (one seed: the paired t-interval over the examples and an exact McNemar test, alpha 0.05; "
        "several: the interval that counts seeds), against the baseline the overview names; a run's accuracy "
        "carries Wilson's interval.</p>"
        '<nav><a href="#tables">Tables</a><a href="#plots">Plots</a><a href="#examples">Adversarial examples</a></nav>'
    )
    main = (
        f'<section id="tables"><h2>Tables</h2>{"".join(_table_html(t) for t in tables)}</section>'
        f'<section id="plots"><h2>Plots</h2>{_figures(plots) or "<p>(none)</p>"}</section>'
        f"{index_html(groups, max_examples_per_run)}"
    )
    out = {"report.html": page_frame(title, header, main, {"example-pages": str(len(pages))})}
    for number in range(1, len(pages) + 1):
        out[page_name(number)] = example_page(title, pages, number, max_examples_per_run)
    return out


def write_html(out_dir: Path, pages: dict[str, str]) -> list[Path]:
    """Write the pages into `out_dir`, removing example pages a previous build left beyond the new ones."""
    for old in Path(out_dir).iterdir():
        if EXAMPLE_PAGE.fullmatch(old.name) and old.name not in pages:
            old.unlink()
    for name, text in pages.items():
        atomic_write_text(Path(out_dir) / name, text)
    return [Path(out_dir) / name for name in pages]
