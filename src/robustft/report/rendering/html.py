"""report.html: one self-contained page (inline CSS and JS, plots as data URIs) with the tables, the plots
and the adversarial examples, swapped words highlighted, filterable by method, recipe and outcome.
Everything from the runs is escaped; the page loads nothing from anywhere."""

from __future__ import annotations

import base64
import html
from importlib import resources
from pathlib import Path

from robustft.errors import ConfigError
from robustft.report.folders import Run
from robustft.report.rendering.tables import Table, all_tables

MAX_EXAMPLES_PER_RUN = 200  # the first ones by sample index; the page says how many were left out


def _asset(name: str) -> str:
    return resources.files("robustft.report.rendering").joinpath("assets", name).read_text(encoding="utf-8")


def _e(text) -> str:
    return html.escape(str(text), quote=True)


def highlight(text: str, indices: set[int], css: str) -> str:
    """`text` escaped, with the words at `indices` (positions of robustft.data.text.split_words) marked."""
    from robustft.data.text import split_words

    _, spans = split_words(text)
    out, last = [], 0
    for i, (start, end) in enumerate(spans):
        if i in indices:
            out.append(_e(text[last:start]))
            out.append(f'<mark class="{css}">{_e(text[start:end])}</mark>')
            last = end
    out.append(_e(text[last:]))
    return "".join(out)


def _label_names(task: str | None) -> tuple[str, ...]:
    from robustft.data.tasks import get_task

    try:
        return get_task(str(task)).label_names
    except ConfigError:
        return ()


def _label(value, names: tuple[str, ...]) -> str:
    if value is None:
        return "-"
    return names[value] if isinstance(value, int) and 0 <= value < len(names) else str(value)


def example_rows(
    runs: list[Run], method_of_run: dict[str, tuple[str, str]], max_per_run: int = MAX_EXAMPLES_PER_RUN
) -> tuple[list[dict], int]:
    """The attacked examples to show (first `max_per_run` by index per run) and how many exist in all."""
    rows, total = [], 0
    for run in runs:
        if run.verb != "attack" or not run.examples:
            continue
        total += len(run.examples)
        method, seed = method_of_run.get(run.name, ("-", "-"))
        names = _label_names(run.config.get("task"))
        recipe = str(run.config.get("recipe", "?")) + (
            f" ({run.config['protocol']})" if run.config.get("protocol") else ""
        )
        for rec in sorted(run.examples, key=lambda r: r.get("index", 0))[:max_per_run]:
            swaps = rec.get("swaps") or []
            indices = {int(s["index"]) for s in swaps}
            rows.append(
                {
                    "method": method,
                    "seed": seed,
                    "recipe": recipe,
                    "outcome": rec.get("result", "?"),
                    "index": rec.get("index"),
                    "label": _label(rec.get("label"), names),
                    "prediction": " → ".join(_label(rec.get(k), names) for k in ("original_pred", "adversarial_pred")),
                    "original": highlight(rec.get("original", ""), indices, "old"),
                    "adversarial": highlight(rec.get("adversarial", ""), indices, "new"),
                    "context": _e(rec["context"]) if rec.get("context") else "",
                    "swaps": ", ".join(f"{_e(s['original'])}→{_e(s['new'])}" for s in swaps),
                    "queries": rec.get("queries", "-"),
                }
            )
    return rows, total


def _table_html(table: Table) -> str:
    head = "".join(f"<th>{_e(c)}</th>" for c in table.columns)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row) + "</tr>" for row in table.rows)
    notes = "".join(f'<p class="note">{_e(n)}</p>' for n in table.notes)
    content = f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>" if table.rows else "<p>(none)</p>"
    return f"<h3>{_e(table.title)}</h3>{content}{notes}"


def _select(name: str, values: list[str]) -> str:
    options = '<option value="">all</option>' + "".join(f'<option value="{_e(v)}">{_e(v)}</option>' for v in values)
    return f'<label>{name} <select id="filter-{name}">{options}</select></label>'


def _examples_html(rows: list[dict], total: int, max_per_run: int) -> str:
    if not rows:
        return '<section id="examples"><h2>Adversarial examples</h2><p>No attack runs with examples.</p></section>'
    filters = "".join(_select(n, sorted({r[n] for r in rows})) for n in ("method", "recipe", "outcome"))
    body = []
    for r in rows:
        context = f'<div class="context">{r["context"]}</div>' if r["context"] else ""
        body.append(
            f'<tr data-method="{_e(r["method"])}" data-recipe="{_e(r["recipe"])}" data-outcome="{_e(r["outcome"])}">'
            f'<td>{_e(r["method"])}<br><span class="context">{_e(r["seed"])}</span></td><td>{_e(r["recipe"])}</td>'
            f'<td class="outcome-{_e(r["outcome"])}">{_e(r["outcome"])}</td><td>{_e(r["index"])}</td>'
            f"<td>{_e(r['label'])}</td><td>{_e(r['prediction'])}</td><td>{context}{r['original']}</td>"
            f"<td>{r['adversarial']}</td><td>{r['swaps']}</td><td>{_e(r['queries'])}</td></tr>"
        )
    head = "".join(
        f"<th>{c}</th>"
        for c in (
            "method",
            "recipe",
            "outcome",
            "index",
            "label",
            "prediction",
            "original",
            "adversarial",
            "swaps",
            "queries",
        )
    )
    return (
        f'<section id="examples"><h2>Adversarial examples</h2><div class="filters">{filters}</div>'
        f'<p class="note">Showing <span id="shown">{len(rows)}</span> of {len(rows)} embedded examples '
        f"({total} attacked in all; the first {max_per_run} by index of each run are embedded). "
        'Swapped words: <mark class="old">original</mark> → <mark class="new">substitute</mark>.</p>'
        f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></section>"
    )


def render_html(
    summary: dict,
    runs: list[Run],
    plots: dict[str, Path],
    title: str = "robustft report",
    max_examples_per_run: int = MAX_EXAMPLES_PER_RUN,
) -> str:
    method_of_run = {r["name"]: (r["method"] or "-", r["seed"] or "-") for r in summary["runs"]}
    rows, total = example_rows(runs, method_of_run, max_examples_per_run)
    tables = "".join(_table_html(t) for t in all_tables(summary))
    figures = "".join(
        f'<figure><img alt="{_e(name)}" src="data:image/png;base64,'
        f'{base64.b64encode(path.read_bytes()).decode("ascii")}"><figcaption class="note">{_e(name)}</figcaption>'
        "</figure>"
        for name, path in plots.items()
    )
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_e(title)}</title>
<script>{_asset("guard.js")}</script>
<style>{_asset("page.css")}</style>
</head>
<body data-ready="0">
<header><h1>{_e(title)}</h1>
<p>{len(summary["runs"])} run folders. Accuracies in % with 95% bootstrap intervals and n; comparisons paired on
the same examples (bootstrap interval of the difference, exact McNemar test, alpha 0.05).</p>
<nav><a href="#tables">Tables</a><a href="#plots">Plots</a><a href="#examples">Adversarial examples</a></nav>
</header>
<main>
<pre id="page-errors"></pre>
<section id="tables"><h2>Tables</h2>{tables}</section>
<section id="plots"><h2>Plots</h2>{figures or "<p>(none)</p>"}</section>
{_examples_html(rows, total, max_examples_per_run)}
</main>
<script>{_asset("page.js")}</script>
</body>
</html>
"""
