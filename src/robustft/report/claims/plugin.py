"""The one interface through which a report takes what a paper (or any other source of verdicts) contributes:
its keys of the summary (report.json), its tables (report.md and report.html) and its plots. The plug-ins are
listed in `robustft.report.registry`; the summary and the rendering never import one by name."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from robustft.report.folders import Run
from robustft.report.rendering.tables import Table

Outcomes = Callable[[str], Mapping[str, bool] | None]  # a run's name -> {example id: right}, None without examples


@dataclass(frozen=True)
class Claims:
    name: str
    add: Callable[[dict, list[Run], Outcomes], None]  # fills its keys of the summary in place, from the rest of it
    tables: Callable[[dict], list[Table]]
    page_tables: Callable[[dict], list[Table]] | None = None  # report.html's, where they differ from report.md's
    plots: Callable[[dict, Path], list[str]] = lambda summary, out_dir: []  # writes its PNGs there, returns names
    at_end: bool = False  # its tables after the data's (reference material), not after the overview
