"""A bench's `deadline`: the time after which no cell should still be training or attacking, because its model does
not outlive the session (checkpoints are not carried, bench/carry.py)."""

from __future__ import annotations

import dataclasses
import datetime
import time
from pathlib import Path

from robustft.bench.calibrate import machine_factors, slowdown
from robustft.bench.forecast import expected_here
from robustft.bench.matrix import Job
from robustft.config import BenchConfig
from robustft.errors import ConfigError


def parse_deadline(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        return datetime.datetime.fromisoformat(text).replace(tzinfo=datetime.timezone.utc).timestamp()
    except ValueError:
        raise ConfigError(f"deadline: '{text}' is not a UTC time YYYY-MM-DDTHH:MM") from None


@dataclasses.dataclass
class Deadline:
    """No cell starts training past `at` (seconds since the epoch) minus the expected seconds of its training,
    evaluations and attacks: a cell cut off is trained again in the next session, even where its attacks keep their
    examples. Each cell is priced when it would start, with the machine's factors as they are then: the jobs
    finished since the bench started (its own included) correct an estimate that the session's first trainings
    show to be off."""

    at: float
    cells: dict[str, list[Job]]  # each trained cell's jobs still to do
    jobs: list[Job]  # the bench's, for the models its evaluations and attacks use
    root: Path  # the benches whose finished jobs calibrate the estimate (bench/calibrate.py)
    slower: float  # one-thread workers: each job takes longer than one process on every core

    def cell_seconds(self, cell: str) -> float:
        todo = self.cells.get(cell, [])
        return sum(expected_here(todo, self.jobs, machine_factors(self.root))) * self.slower

    def leaves_no_time_for(self, cell: str) -> bool:
        return time.time() + self.cell_seconds(cell) > self.at


def deadline_for(cfg: BenchConfig, todo: list[Job], jobs: list[Job], root: Path) -> Deadline | None:
    at = parse_deadline(cfg.deadline)
    if at is None:
        return None
    trained = {j.cell for j in todo if j.kind == "train"}
    cells: dict[str, list[Job]] = {}
    for job in todo:
        if job.cell in trained:
            cells.setdefault(job.cell, []).append(job)
    return Deadline(at, cells, jobs, root, slowdown(cfg.threads))
