"""How long a bench's jobs will take here: each job's price (bench/pricing.py) scaled by this machine's factors
(bench/calibrate.py), a partly run job's part left at its own measured rate (bench/progress.py); and the job list
`robustft bench PRESET --list` prints; with several workers, the wall time their shared queue takes."""

from __future__ import annotations

import datetime
import math

from robustft.bench.calibrate import describe_factors, slowdown
from robustft.bench.matrix import Job
from robustft.bench.plan import status
from robustft.bench.pricing import expected_seconds
from robustft.bench.progress import seconds_left

Factors = dict[str, tuple[float, int]]  # {kind: (measured / expected, jobs measured)}


def expected_here(jobs: list[Job], all_jobs: list[Job], factors: Factors) -> list[float]:
    """Each job's expected seconds on this machine as one process on every core."""
    scale = [factors.get(j.kind, (1.0, 0))[0] for j in jobs]
    priced = zip(jobs, expected_seconds(jobs, all_jobs), scale, strict=True)
    return [left if (left := seconds_left(j)) is not None else s * f for j, s, f in priced]


def wall_seconds(jobs: list[Job], seconds: list[float], workers: int) -> float:
    """The wall time of `workers` processes running `jobs` (the jobs still to do, in the bench's order, each taking
    its `seconds` in one of them) as bench/runner.py's queue runs them: a free worker takes the first job left that
    can start, an evaluation or attack only once its model's training has ended."""
    trainings = {j.id for j in jobs if j.kind == "train"}
    ends: dict[str, float] = {}  # each started job's end

    def can_start(job: Job, now: float) -> bool:
        if job.kind == "train" or job.cell not in trainings:  # a training, or a model trained before
            return True
        return ends.get(job.cell, math.inf) <= now

    free = [0.0] * max(1, workers)  # when each worker is next free
    left = list(zip(jobs, seconds, strict=True))
    while left:
        worker = min(range(len(free)), key=free.__getitem__)
        now = free[worker]
        picked = next((item for item in left if can_start(item[0], now)), None)
        if picked is None:  # every job left waits for a training another worker is running
            free[worker] = min(end for end in ends.values() if end > now)
            continue
        left.remove(picked)
        ends[picked[0].id] = free[worker] = now + picked[1]
    return max(ends.values(), default=0.0)


def describe_wall_time(
    jobs: list[Job], one_process: list[float], workers: int, threads: int | None, start: float | None = None
) -> str:
    """'about 246 min as one process' (`one_process`: each job's `expected_here` seconds) and, for several workers,
    the wall time their queue is expected to take; with `start` (seconds since the epoch), when it would end, in
    UTC."""
    wall = sum(one_process)
    text = f"about {wall / 60:.0f} min as one process"
    if workers > 1:
        wall = wall_seconds(jobs, [s * slowdown(threads) for s in one_process], workers)
        text += f", about {wall / 60:.0f} min of wall time on {workers} workers"
    if start is not None:
        end = datetime.datetime.fromtimestamp(start + wall, datetime.timezone.utc)
        text += f", ending about {end:%Y-%m-%d %H:%M} UTC"
    return text


def describe_jobs(jobs: list[Job], all_jobs: list[Job], factors: Factors) -> str:
    lines = [f"{'status':<8} {'~minutes':>8}  job"]
    for job, seconds in zip(jobs, expected_here(jobs, all_jobs, factors), strict=True):
        lines.append(f"{status(job):<8} {seconds / 60:8.1f}  {job.id}")
    return "\n".join(
        lines
        + [f"(minutes of one process on every core, {describe_factors(factors)}, partly run jobs at their own rate)"]
    )
