"""The adversarial examples of a report, on pages of their own (examples-001.html, ...) next to report.html: a study
attacks thousands of examples, and one page holding them all would be too heavy to open or send. Each attack run's
first `max_per_run` examples (by index) are split into pages of `per_page`; report.html links every page from an
index of the runs, and each page links the report, its neighbours and its run's other pages (plain links, so they
work from file:// where a page may not fetch files). Swapped words are highlighted in both texts."""

from __future__ import annotations

from dataclasses import dataclass, field

from robustft.data.text import split_words
from robustft.errors import ConfigError
from robustft.report.folders import Run
from robustft.report.rendering.page_shell import escape, page

MAX_EXAMPLES_PER_RUN = 200  # the first ones by sample index; the pages say how many were left out
EXAMPLES_PER_PAGE = 100  # long texts (IMDB) make a row a few kB: a page stays a few hundred kB
OUTCOMES = ("succeeded", "failed", "skipped", "error")
COLUMNS = ("method", "recipe", "outcome", "index", "label", "prediction", "original", "adversarial", "swaps", "queries")


@dataclass
class RunExamples:
    """One attack run's examples: what it attacked in all, and the rows shown, in pages."""

    run: str
    method: str
    seed: str
    recipe: str
    attacked: int
    outcomes: dict[str, int]
    rows: list[dict]
    pages: list[str] = field(default_factory=list)  # file names, filled by `paginate`


def page_name(number: int) -> str:
    return f"examples-{number:03d}.html"


def swap_spans(text: str, swaps: list[dict], side: str) -> list[tuple[int, int]]:
    """The character spans in `text` of each swap's `side` ("original" or "new"). A swap's index counts the original
    words, and a substitute may hold several (TextBugger's "good" -> "go od"): it is one span, and the words after it
    sit further on. A span whose text is not the swap's is looked for after the previous one instead."""
    _, spans = split_words(text)
    out, shift, cursor = [], 0, 0
    for swap in sorted(swaps, key=lambda s: int(s["index"])):
        value = str(swap.get(side, ""))
        count = len(split_words(value)[0])
        first = int(swap["index"]) + shift
        shift += count - 1
        if count == 0:
            continue
        if 0 <= first and first + count <= len(spans):
            start, end = spans[first][0], spans[first + count - 1][1]
            if text[start:end] == value and start >= cursor:
                out.append((start, end))
                cursor = end
                continue
        found = text.find(value, cursor)
        if found >= 0:
            out.append((found, found + len(value)))
            cursor = found + len(value)
    return out


def highlight(text: str, swaps: list[dict], side: str, css: str) -> str:
    """`text` escaped, with each swap's `side` marked as one change."""
    out, last = [], 0
    for start, end in swap_spans(text, swaps, side):
        out.append(escape(text[last:start]))
        out.append(f'<mark class="{css}">{escape(text[start:end])}</mark>')
        last = end
    out.append(escape(text[last:]))
    return "".join(out)


def _label_names(run: Run) -> tuple[str, ...]:
    """The run's label names in id order: those its own data recorded (`--data` and `--dataset` runs keep them as
    `data_labels`; a registered task of theirs is gone), else its task's; none for a task not known here."""
    from robustft.data.tasks import get_task

    recorded = run.config.get("data_labels") or (run.model_config or {}).get("data_labels")
    if recorded:
        return tuple(str(name) for name in recorded)
    try:
        return get_task(str(run.config.get("task"))).label_names
    except ConfigError:
        return ()


def _substitute(swap: dict) -> str:
    """The substitute, escaped, with each character it brings that is not plain ASCII named by its code point: a
    look-alike swap ("brilliant" -> "brіlliant", a Cyrillic і) or an invisible one would otherwise read as no change."""
    new, old = str(swap["new"]), str(swap["original"])
    brought = [c for c in dict.fromkeys(new) if not c.isascii() and c not in old]
    return escape(new) + (f" ({', '.join(f'{escape(c)} U+{ord(c):04X}' for c in brought)})" if brought else "")


def _label(value, names: tuple[str, ...]) -> str:
    if value is None:
        return "-"
    return names[value] if isinstance(value, int) and 0 <= value < len(names) else str(value)


def _row(rec: dict, run: RunExamples, names: tuple[str, ...]) -> dict:
    swaps = rec.get("swaps") or []
    return {
        "run": run.run,
        "method": run.method,
        "seed": run.seed,
        "recipe": run.recipe,
        "outcome": rec.get("result", "?"),
        "index": rec.get("index"),
        "label": _label(rec.get("label"), names),
        "prediction": " → ".join(_label(rec.get(k), names) for k in ("original_pred", "adversarial_pred")),
        "original": highlight(rec.get("original", ""), swaps, "original", "old"),
        "adversarial": highlight(rec.get("adversarial", ""), swaps, "new", "new"),
        "context": escape(rec["context"]) if rec.get("context") else "",
        "swaps": ", ".join(f"{escape(s['original'])}→{_substitute(s)}" for s in swaps),
        "queries": rec.get("queries", "-"),
    }


def collect(
    runs: list[Run], method_of_run: dict[str, tuple[str, str]], max_per_run: int = MAX_EXAMPLES_PER_RUN
) -> list[RunExamples]:
    """Every attack run with examples, ordered by recipe, method and seed, with its first `max_per_run` rows."""
    out = []
    for run in runs:
        if run.verb != "attack" or not run.examples:
            continue
        method, seed = method_of_run.get(run.name, ("-", "-"))
        protocol = run.config.get("protocol")
        recipe = str(run.config.get("recipe", "?")) + (f" ({protocol})" if protocol else "")
        results = [str(rec.get("result", "?")) for rec in run.examples]
        group = RunExamples(
            run.name, method, seed, recipe, len(results), {o: results.count(o) for o in dict.fromkeys(results)}, []
        )
        names = _label_names(run)
        shown = sorted(run.examples, key=lambda r: r.get("index", 0))[:max_per_run]
        group.rows = [_row(rec, group, names) for rec in shown]
        out.append(group)
    return sorted(out, key=lambda g: (g.recipe, g.method, g.seed, g.run))


def paginate(groups: list[RunExamples], per_page: int = EXAMPLES_PER_PAGE) -> list[tuple[RunExamples, list[dict]]]:
    """The pages in order, each one run's rows (at most `per_page`); fills each run's `pages`."""
    if per_page < 1:
        raise ConfigError(f"examples per page: {per_page} (must be at least 1)")
    pages = []
    for group in groups:
        group.pages = []
        for start in range(0, len(group.rows), per_page):
            pages.append((group, group.rows[start : start + per_page]))
            group.pages.append(page_name(len(pages)))
    return pages


def _links(names: list[str], current: str = "") -> str:
    return " ".join(
        f"<strong>{i}</strong>" if name == current else f'<a class="page-link" href="{name}">{i}</a>'
        for i, name in enumerate(names, start=1)
    )


def _outcome_link(group: RunExamples, outcome: str) -> str:
    """The run's count of `outcome`, linking its first page filtered to it (the filter follows its other pages)."""
    count = group.outcomes.get(outcome, 0)
    if not count or not group.pages:
        return str(count)
    return f'<a class="outcome-link" href="{group.pages[0]}#outcome={outcome}">{count}</a>'


def index_html(groups: list[RunExamples], max_per_run: int) -> str:
    """report.html's examples section: one row per attack run, with its outcomes and links to its pages."""
    if not groups:
        return '<section id="examples"><h2>Adversarial examples</h2><p>No attack runs with examples.</p></section>'
    head = "".join(f"<th>{c}</th>" for c in ("recipe", "method", "seed", "attacked", *OUTCOMES, "shown", "pages"))
    body = "".join(
        f"<tr><td>{escape(g.recipe)}</td><td>{escape(g.method)}</td><td>{escape(g.seed)}</td><td>{g.attacked}</td>"
        + "".join(f"<td>{_outcome_link(g, o)}</td>" for o in OUTCOMES)
        + f"<td>{len(g.rows)}</td><td>{_links(g.pages)}</td></tr>"
        for g in groups
    )
    attacked = sum(g.attacked for g in groups)
    shown = sum(len(g.rows) for g in groups)
    pages = sum(len(g.pages) for g in groups)
    return (
        '<section id="examples"><h2>Adversarial examples</h2>'
        f'<p class="note">{attacked} attacked examples in {len(groups)} attack runs; the first {max_per_run} by index '
        f"of each run are shown ({shown}), on {pages} pages of their own beside this file, filterable by outcome. "
        'Swapped words: <mark class="old">original</mark> → <mark class="new">substitute</mark>.</p>'
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></section>"
    )


def _example_row(r: dict) -> str:
    context = f'<div class="context">{r["context"]}</div>' if r["context"] else ""
    return (
        f'<tr data-run="{escape(r["run"])}" data-index="{escape(r["index"])}" data-method="{escape(r["method"])}" '
        f'data-recipe="{escape(r["recipe"])}" data-outcome="{escape(r["outcome"])}">'
        f'<td>{escape(r["method"])}<br><span class="context">{escape(r["seed"])}</span></td>'
        f"<td>{escape(r['recipe'])}</td>"
        f'<td class="outcome-{escape(r["outcome"])}">{escape(r["outcome"])}</td><td>{escape(r["index"])}</td>'
        f"<td>{escape(r['label'])}</td><td>{escape(r['prediction'])}</td><td>{context}{r['original']}</td>"
        f"<td>{r['adversarial']}</td><td>{r['swaps']}</td><td>{escape(r['queries'])}</td></tr>"
    )


def _outcome_filter(group: RunExamples) -> str:
    values = sorted(group.outcomes)  # the run's, not only this page's: the filter carries on to its other pages
    options = '<option value="">all</option>' + "".join(
        f'<option value="{escape(v)}">{escape(v)}</option>' for v in values
    )
    return f'<div class="filters"><label>outcome <select id="filter-outcome">{options}</select></label></div>'


def example_page(title: str, pages: list[tuple[RunExamples, list[dict]]], number: int, max_per_run: int) -> str:
    """Page `number` (from 1) of `pages`: its rows, the outcome filter, and links to the report and other pages."""
    group, rows = pages[number - 1]
    first = sum(len(r) for g, r in pages[: number - 1] if g is group) + 1
    previous = f'<a id="previous" rel="prev" href="{page_name(number - 1)}">← previous</a>' if number > 1 else ""
    following = f'<a id="next" rel="next" href="{page_name(number + 1)}">next →</a>' if number < len(pages) else ""
    header = (
        f"<h1>Adversarial examples: {escape(group.method)} {escape(group.seed)}, {escape(group.recipe)}</h1>"
        f"<p>Page {number} of {len(pages)}. Run {escape(group.run)}: examples {first}–{first + len(rows) - 1} of the "
        f"{len(group.rows)} shown ({group.attacked} attacked; the first {max_per_run} by index of each run are shown)."
        f'</p><nav><a id="report" href="report.html">↑ {escape(title)}</a>{previous}{following}'
        f"<span>this run's pages: {_links(group.pages, page_name(number))}</span></nav>"
    )
    head = "".join(f"<th>{c}</th>" for c in COLUMNS)
    main = (
        f'<section id="examples">{_outcome_filter(group)}'
        f'<p class="note">Showing <span id="shown">{len(rows)}</span> of {len(rows)} on this page. '
        'Swapped words: <mark class="old">original</mark> → <mark class="new">substitute</mark>.</p>'
        f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(_example_row(r) for r in rows)}</tbody></table>"
        "</section>"
    )
    return page(f"{title}: examples page {number}", header, main, {"page": str(number), "pages": str(len(pages))})
