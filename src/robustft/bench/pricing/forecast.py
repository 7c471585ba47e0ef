"""What the bench prints of its prices: the job list of `robustft bench list`, whether the estimate was scaled to
this machine, and, for several workers, the wall time their shared queue takes."""

from __future__ import annotations

import datetime
import math

from robustft.bench.pricing import Factors
from robustft.bench.pricing.rates import slowdown


def wall_seconds(jobs: list, seconds: list[float], workers: int) -> float:
    """The wall time of `workers` processes running `jobs` (the jobs still to do, in the bench's order, each with an
    `id`, `kind` and `cell` and taking its `seconds` in one of them) as bench/runner.py's queue runs them: a free
    worker takes the first job left that can start, an evaluation or attack only once its model's training ended."""
    trainings = {j.id for j in jobs if j.kind == "train"}
    ends: dict[str, float] = {}  # each started job's end

    def can_start(job, now: float) -> bool:
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
    jobs: list, one_process: list[float], workers: int, threads: int | None, start: float | None = None
) -> str:
    """'about 246 min as one process' (`one_process`: each job's price here) and, for several workers, the wall time
    their queue is expected to take; with `start` (seconds since the epoch), when it would end, in UTC."""
    wall = sum(one_process)
    text = f"about {wall / 60:.0f} min as one process"
    if workers > 1:
        wall = wall_seconds(jobs, [s * slowdown(threads) for s in one_process], workers)
        text += f", about {wall / 60:.0f} min of wall time on {workers} workers"
    if start is not None:
        end = datetime.datetime.fromtimestamp(start + wall, datetime.timezone.utc)
        text += f", ending about {end:%Y-%m-%d %H:%M} UTC"
    return text


def describe_factors(factors: Factors) -> str:
    """'trainings x3.5 (3 finished here), attacks x0.9 (5 finished here)' or that nothing is calibrated yet."""
    if not factors:
        return "not calibrated to this machine yet (no job of any bench here finished on it)"
    names = {"train": "trainings", "attack": "attacks"}
    parts = [f"{names[kind]} x{factor:.1f} ({n} finished here)" for kind, (factor, n) in factors.items()]
    return "scaled to this machine from its finished jobs: " + ", ".join(parts)


def describe_jobs(rows: list[tuple[str, float, str]], factors: Factors) -> str:
    """The job list: each job's (status, seconds here, id)."""
    lines = [f"{'status':<8} {'~minutes':>8}  job"]
    lines += [f"{status:<8} {seconds / 60:8.1f}  {job_id}" for status, seconds, job_id in rows]
    tail = f"(minutes of one process on every core, {describe_factors(factors)}, partly run jobs at their own rate)"
    return "\n".join([*lines, tail])
