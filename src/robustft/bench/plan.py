"""A bench's plan: its jobs (bench/matrix.py expands them), the ones a call selects (`only`, `skip`, this process's
shard) and each job's status read from its run folder. Reading a plan writes nothing, so `--list` is read-only."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path

from robustft import runs
from robustft.bench.matrix import Job, bench_dir, expand
from robustft.config import BenchConfig
from robustft.errors import ConfigError


def status(job: Job) -> str:
    if runs.is_finished(job.folder):
        return "done"
    return "partial" if (job.folder / runs.CONFIG).exists() else "todo"


def matches(job: Job, pattern: str) -> bool:
    """A glob on the job id from its start; a cell's id also takes the cell's evaluations and attacks. Not on any
    part of it: 'rift/*' would then also take every method's pwws-rift and genetic-rift attacks (a leading '*' asks
    for a part)."""
    return fnmatch.fnmatch(job.id, pattern) or fnmatch.fnmatch(job.id, f"{pattern} *")


def select(jobs: list[Job], only: str | None, skip: str | list[str] | None = None) -> list[Job]:
    """The jobs matching `only` (all when unset) and none of the `skip` globs, e.g. the costliest methods' cells left
    for last."""
    skips = [skip] if isinstance(skip, str) else list(skip or [])
    chosen = [j for j in jobs if (not only or matches(j, only)) and not any(matches(j, s) for s in skips)]
    if not chosen:
        but = " or ".join(f"'{s}'" for s in skips) or "''"
        raise ConfigError(f"only / skip: no job id matches '{only or '*'}' but not {but} (list them with --list)")
    return chosen


def shard_jobs(jobs: list[Job], shard: tuple[int, int] | None) -> list[Job]:
    """The jobs of the cells i, i+n, ... (in the bench's order) for shard (i, n), each cell with all its jobs."""
    if shard is None:
        return jobs
    cells = list(dict.fromkeys(j.cell for j in jobs))
    mine = {cells[k] for k in runs.shard_indices(len(cells), shard)}
    return [j for j in jobs if j.cell in mine]


@dataclass
class Plan:
    cfg: BenchConfig  # validated
    jobs: list[Job]  # every job of the bench, in its order
    chosen: list[Job]  # the ones this call works on
    folder: Path  # the bench folder
    shard: tuple[int, int] | None

    def statuses(self, jobs: list[Job] | None = None) -> dict[str, str]:
        return {j.id: status(j) for j in (self.chosen if jobs is None else jobs)}

    def todo(self) -> list[Job]:
        return [j for j in self.chosen if status(j) != "done"]


def plan(cfg: BenchConfig, only: str | None = None, skip: str | list[str] | None = None) -> Plan:
    """The bench's jobs and the ones `only`, `skip` (else the config's) and this process's shard select (reads
    nothing but run folders' files, writes nothing)."""
    cfg = cfg.validate()
    jobs, shard = expand(cfg), runs.shard_of(cfg)
    chosen = select(jobs, only or cfg.only, skip or cfg.skip)
    return Plan(cfg, jobs, shard_jobs(chosen, shard), bench_dir(cfg), shard)
