"""What a bench's jobs will take on this machine: `price(plan)`. A leaf: it reads only its rates file (rates.py)
and the plain numbers each job is described by (work.py), which bench/costs.py gathers from the configs, the costs
objectives declare and the task registry. A slower machine is corrected by factors from its finished jobs; a partly
run job is priced at its own rate (IM + RIFT's SST-2 cell, configs/rift-1000.yaml, was estimated with its
evaluations and attacks at 189 minutes; its training alone measured 3-4 minutes a step for 180 steps)."""

from __future__ import annotations

from dataclasses import dataclass, field

from robustft.bench.pricing.rates import RATES_ENV, RATES_FILE, Rates, load_rates, slowdown  # noqa: F401
from robustft.bench.pricing.work import Model, Work, im_forward_factor, seconds  # noqa: F401

Factors = dict[str, tuple[float, int]]  # {kind: (measured / expected, jobs measured)}
CALIBRATED = ("train", "attack")  # evaluations take seconds: not worth a factor


@dataclass(frozen=True)
class Priced:
    """One job to price: what it does and, once partly run, what it measured."""

    work: Work
    done: float = 0.0  # units done (work.units) of a partly run training or attack
    spent: float = 0.0  # their seconds
    threads: int | None = None  # the threads it ran them with


@dataclass
class Plan:
    jobs: list[Priced]
    factors: Factors = field(default_factory=dict)  # this machine's, from its finished jobs


def seconds_left(job: Priced, rates: Rates | None = None) -> float | None:
    """A partly run job's seconds left at its own rate as one process on every core, or None before it measured."""
    if job.done <= 0:
        return None
    left = job.spent / job.done * max(0.0, job.work.units - job.done)
    return left / slowdown(job.threads, rates)


def price(plan: Plan, rates: Rates | None = None) -> list[float]:
    """Each job's expected seconds here as one process on every core."""
    scaled = []
    for job in plan.jobs:
        left = seconds_left(job, rates)
        factor = plan.factors.get(job.work.kind, (1.0, 0))[0]
        scaled.append(left if left is not None else seconds(job.work, rates) * factor)
    return scaled


def factors_from(samples: list[tuple[str, float, float]]) -> Factors:
    """{kind: (measured / expected, jobs)} from finished jobs' (kind, measured seconds, expected seconds); a kind
    without any is left out (the estimate stands as it is)."""
    sums = {kind: [0.0, 0.0, 0] for kind in CALIBRATED}
    for kind, measured, expected in samples:
        if kind in sums and expected > 0:
            sums[kind] = [sums[kind][0] + measured, sums[kind][1] + expected, sums[kind][2] + 1]
    return {kind: (measured / expected, n) for kind, (measured, expected, n) in sums.items() if n}
