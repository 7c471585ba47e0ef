"""The claims plug-ins a report runs, in the order their tables appear (`claims.plugin.Claims`): the claims and
registered comparisons' verdicts, then each paper's (IM-BERT, RIFT), then the published anchors and the deviations
from the papers' protocols. A new paper is one module under claims/ and one entry here."""

from __future__ import annotations

from pathlib import Path

from robustft.report.claims import anchors, common, deviations, im_bert, rift_plugin
from robustft.report.claims.plugin import Outcomes
from robustft.report.folders import Run
from robustft.report.rendering.markdown import markdown_document
from robustft.report.rendering.tables import Table, all_tables, page_tables

PLUGINS = (common.VERDICTS, im_bert.IM_BERT, rift_plugin.RIFT, anchors.ANCHORS, deviations.DEVIATIONS)


def add_claims(summary: dict, runs: list[Run], outcomes_of: Outcomes) -> None:
    for plugin in PLUGINS:
        plugin.add(summary, runs, outcomes_of)


def claims_plots(summary: dict, out_dir: Path) -> list[str]:
    return [name for plugin in PLUGINS for name in plugin.plots(summary, out_dir)]


def report_tables(summary: dict, page: bool = False) -> list[Table]:
    """Every table of report.md (`page`: of report.html): the plug-ins' after the overview, or after the data's for
    reference material (`at_end`)."""
    lead, end = [], []
    for p in PLUGINS:
        (end if p.at_end else lead).extend((p.page_tables if page and p.page_tables else p.tables)(summary))
    return (page_tables if page else all_tables)(summary, lead, end)


def render_markdown(summary: dict, title: str = "robustft report", plots: list[str] = ()) -> str:
    """report.md: every table, the plots and the runs."""
    return markdown_document(summary, report_tables(summary), title, plots)
