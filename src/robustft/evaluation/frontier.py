"""RIFT against a baseline's clean-vs-robust frontier at RIFT's own clean accuracy (SPEC section 7, matched clean).

A baseline trained at several strengths traces a frontier: stronger adversarial training buys robust accuracy with
clean accuracy. Comparing RIFT with one baseline setting that is far more (or less) accurate on clean data says
little; comparing it with the frontier at the clean accuracy RIFT reached says whether RIFT moves the frontier.

- The frontier is piecewise linear in clean accuracy through its points (each one seed, one strength), and is not
  extrapolated: a RIFT seed whose clean accuracy lies outside the points' range is an error naming it.
- Per RIFT seed s: g_s = robust_s - frontier(clean_s). The difference is the mean of g_s.
- Its variance adds RIFT's seed spread, var(g) / S (which holds RIFT's own example noise too), and the frontier's
  binomial noise: the mean frontier value is a linear function of the points' robust accuracies y_k and, by the
  delta method, of their clean accuracies x_k (which move the segment). A point's clean and robust accuracies come
  from one model on overlapping examples, so their errors may be correlated: each point's share is bounded by
  assuming perfect correlation, (|a_k| sd(y_k) + |b_k| sd(x_k))^2. Binomial sds use Agresti-Coull's (p n + 2) /
  (n + 4), so a point at 0% or 100% still carries noise.
- Degrees of freedom: Satterthwaite's, the frontier part counting as known (binomial), floored at S - 1; the
  half-width is never below the t_{S-1} interval of RIFT's seeds alone.
- Not carried: the frontier's own seed spread (each point is one seed). Train the frontier on several seeds and
  average each strength to shrink what this interval cannot see.
- One RIFT seed: the interval is RIFT's and the frontier's binomial noise only (basis "examples", no seed claim).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import norm
from scipy.stats import t as student_t

from robustft.evaluation.intervals import LEVEL, StatisticsInputError

MIN_FRONTIER_POINTS = 3


@dataclass(frozen=True)
class FrontierPoint:
    """One baseline model (one strength, one seed): clean and robust accuracy and the examples behind each."""

    clean: float
    robust: float
    n_clean: int
    n_robust: int
    label: str = ""


def _binomial_sd(p: float, n: int) -> float:
    adjusted = (p * n + 2) / (n + 4)  # Agresti-Coull: never zero at 0% or 100%
    return math.sqrt(adjusted * (1 - adjusted) / (n + 4))


def _check(frontier: Sequence[FrontierPoint], rift: Sequence[tuple[float, float]]) -> list[FrontierPoint]:
    if len(frontier) < MIN_FRONTIER_POINTS:
        raise StatisticsInputError(f"a frontier needs {MIN_FRONTIER_POINTS}+ strengths, got {len(frontier)} points")
    for p in frontier:
        if not (0 <= p.clean <= 1 and 0 <= p.robust <= 1) or p.n_clean < 1 or p.n_robust < 1:
            raise StatisticsInputError(f"frontier point {p.label or p}: accuracies must lie in [0, 1] and n >= 1")
    points = sorted(frontier, key=lambda p: p.clean)
    if len({p.clean for p in points}) < len(points):
        raise StatisticsInputError("two frontier points share a clean accuracy: the frontier is not a function of it")
    if not rift or any(len(pair) != 2 or not all(0 <= x <= 1 for x in pair) for pair in rift):
        raise StatisticsInputError("RIFT needs one (clean, robust) accuracy pair in [0, 1] per seed")
    low, high = points[0].clean, points[-1].clean
    for s, (clean, _) in enumerate(rift):
        if not low <= clean <= high:
            raise StatisticsInputError(
                f"RIFT seed {s}'s clean accuracy {100 * clean:.1f}% lies outside the frontier's clean range "
                f"{100 * low:.1f}%-{100 * high:.1f}%: the frontier is not extrapolated; train the baseline at a "
                "strength whose clean accuracy reaches it"
            )
    return points


def _interpolate(points: list[FrontierPoint], clean: float) -> tuple[int, float, float, float]:
    """Segment index j, weight lam on point j+1, the frontier's robust accuracy there and the segment's slope."""
    xs = [p.clean for p in points]
    j = min(max(int(np.searchsorted(xs, clean, side="right")) - 1, 0), len(points) - 2)
    left, right = points[j], points[j + 1]
    lam = (clean - left.clean) / (right.clean - left.clean)
    slope = (right.robust - left.robust) / (right.clean - left.clean)
    return j, lam, (1 - lam) * left.robust + lam * right.robust, slope


def _frontier_variance(points: list[FrontierPoint], rift: Sequence[tuple[float, float]]) -> tuple[float, list]:
    """Variance of the mean frontier value at RIFT's clean accuracies, and the frontier value per seed."""
    robust_weight, clean_weight, at = np.zeros(len(points)), np.zeros(len(points)), []
    for clean, _ in rift:
        j, lam, value, slope = _interpolate(points, clean)
        robust_weight[j : j + 2] += np.array([1 - lam, lam]) / len(rift)
        clean_weight[j : j + 2] += -slope * np.array([1 - lam, lam]) / len(rift)  # d frontier / d x_j, x_{j+1}
        at.append(value)
    variance = sum(
        (abs(a) * _binomial_sd(p.robust, p.n_robust) + abs(b) * _binomial_sd(p.clean, p.n_clean)) ** 2
        for a, b, p in zip(robust_weight, clean_weight, points, strict=True)
    )
    return float(variance), at


def matched_clean_difference(
    frontier: Sequence[FrontierPoint],
    rift: Sequence[tuple[float, float]],
    n_robust: int | None = None,
    level: float = LEVEL,
) -> dict:
    """RIFT's robust accuracy minus the baseline frontier's at RIFT's clean accuracy, per seed and on average, with
    an interval carrying RIFT's seed spread and the frontier's binomial noise (module docstring). `rift` holds one
    (clean, robust) pair per seed; `n_robust`, RIFT's attacked examples, is needed only with one seed."""
    points = _check(frontier, rift)
    frontier_var, at = _frontier_variance(points, rift)
    gaps = np.array([robust for _, robust in rift]) - np.array(at)
    seeds, mean, q = len(gaps), float(gaps.mean()), (1 + level) / 2
    if seeds == 1:
        if n_robust is None or n_robust < 1:
            raise StatisticsInputError("one RIFT seed: pass n_robust (its attacked examples) for the binomial noise")
        half = norm.ppf(q) * math.sqrt(frontier_var + _binomial_sd(rift[0][1], n_robust) ** 2)
        basis, df, seed_var = "examples", math.inf, None
    else:
        seed_var = float(gaps.var(ddof=1)) / seeds
        total = seed_var + frontier_var
        df = max(total**2 / (seed_var**2 / (seeds - 1)), seeds - 1) if seed_var > 0 else math.inf
        half = max(student_t.ppf(q, df) * math.sqrt(total), student_t.ppf(q, seeds - 1) * math.sqrt(seed_var))
        basis = "seeds"
    return {
        "difference": mean,
        "ci95": [mean - float(half), mean + float(half)],
        "n_seeds": seeds,
        "basis": basis,
        "df": float(df),
        "per_seed": [float(g) for g in gaps],
        "frontier_at": at,
        "seed_variance": seed_var,
        "frontier_variance": frontier_var,
        "frontier_range": [points[0].clean, points[-1].clean],
    }
