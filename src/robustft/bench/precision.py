"""One precision per study: 'auto' resolves per machine (bf16 only on CPUs with native bf16), so a bench resumed on
another machine would train its remaining cells in another precision than its finished ones, and its paired
comparisons would mix precisions. Its 'auto' trainings go on in the precision the finished ones ran in."""

from __future__ import annotations

import logging

from robustft import runs, runtime
from robustft.bench.matrix import Job

log = logging.getLogger("robustft.bench")


def trained_precisions(finished: list[Job]) -> dict[str, list[str]]:
    """{precision: the finished trainings that ran in it} (as their metrics.json records it)."""
    found: dict[str, list[str]] = {}
    for job in finished:
        ran = (runs.read_metrics(job.folder) or {}).get("precision")
        if ran:
            found.setdefault(ran, []).append(job.id)
    return found


def pin_auto_precision(jobs: list[Job], device: str) -> None:
    """Set `auto_precision` of the bench's 'auto' trainings to the one precision its finished trainings ran in
    (nothing when none finished yet, or when they already differ, which is logged)."""
    trainings = [j for j in jobs if j.kind == "train" and j.config.precision == "auto"]
    finished = [j for j in trainings if runs.is_finished(j.folder)]
    found = trained_precisions(finished)
    if len(found) > 1:
        log.warning(
            "bench: its finished 'auto' trainings ran in several precisions (%s): its comparisons mix them",
            "; ".join(f"{p}: {', '.join(ids)}" for p, ids in sorted(found.items())),
        )
    if len(found) != 1:
        return
    (chosen,) = found
    here = runtime.resolve_precision("auto", runtime.pick_device(device))
    todo = len(trainings) - len(finished)
    if chosen != here and todo:
        log.warning(
            "bench: its %d finished trainings ran in %s; 'auto' means %s on this machine: training the other %d in "
            "%s so that the study keeps one precision (set precision in the config to choose)",
            len(found[chosen]),
            chosen,
            here,
            todo,
            chosen,
        )
    for job in trainings:
        job.config.auto_precision = chosen
