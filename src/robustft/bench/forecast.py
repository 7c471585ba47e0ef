"""How long a bench's jobs will take here: each job's price (bench/pricing.py) scaled by this machine's factors
(bench/calibrate.py), a partly run job's part left at its own measured rate (bench/progress.py); and the job list
`robustft bench PRESET --list` prints."""

from __future__ import annotations

from robustft.bench.calibrate import describe_factors
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


def describe_jobs(jobs: list[Job], all_jobs: list[Job], factors: Factors) -> str:
    lines = [f"{'status':<8} {'~minutes':>8}  job"]
    for job, seconds in zip(jobs, expected_here(jobs, all_jobs, factors), strict=True):
        lines.append(f"{status(job):<8} {seconds / 60:8.1f}  {job.id}")
    return "\n".join(
        lines
        + [f"(minutes of one process on every core, {describe_factors(factors)}, partly run jobs at their own rate)"]
    )
