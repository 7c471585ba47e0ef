"""The interval of a method difference that counts training seeds (or k-shot samples) as the replicates.

Each seed scores both methods on the same test examples, so the data are a seeds x examples table of paired
differences d[s, i] = correct_A - correct_B. Three sources of spread enter the mean over the table:

    d[s, i] = delta + u[s] + v[i] + w[s, i]
    u: the seed's own effect (between-seed spread)          variance `seed`
    v: the example's effect, shared by every seed            variance `example`
    w: what is left, the seed-by-example noise               variance `residual`

    Var(mean) = seed / S + example / n + residual / (n S)

The spread of the S per-seed means carries `seed` and `residual / n` but not `example`: every seed scores the
same examples, so v cancels out of their differences. A t-interval over the per-seed means alone is therefore too
short when models agree across seeds on which examples they get right (docs/statistics.md shows it covering 68%).
The crossed two-way mean squares estimate all three parts; the interval uses their sum with Satterthwaite's
degrees of freedom (S - 1 when the seeds dominate, many when the examples do), and is never shorter than the
t-interval over per-seed means (adding a variance part must not narrow it). The coverage module checks it by
simulation at 3 and 5 seeds. See docs/statistics.md.

This module is also the one owner of which interval each reported quantity gets (`INTERVALS`; docs/statistics.md,
"One interval per number"): a run's accuracy (a proportion) gets Wilson's score interval, which keeps its width at
0/n and n/n where a bootstrap of 0/1 values collapses to a point; a difference over one seed the paired t over its
examples; anything over several seeds the interval above. Where a t-interval has no spread to estimate (every value
the same), it is widened to what Wilson's interval allows for the share of examples that could differ.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
from scipy.stats import norm
from scipy.stats import t as student_t

from robustft.errors import RobustftError

LEVEL = 0.95
# The method behind each reported quantity's 95% interval, as captions name it (one per quantity, report-wide).
ACCURACY_ONE_SEED = "Wilson score interval over the examples"
ACCURACY_SEEDS = "interval counting seeds as replicates"
DIFFERENCE_ONE_SEED = "paired t-interval over the examples"
DIFFERENCE_SEEDS = "paired interval counting seeds as replicates"
INTERVALS = {
    "accuracy, one seed": ACCURACY_ONE_SEED,
    "accuracy, several seeds": ACCURACY_SEEDS,
    "paired difference, one seed": DIFFERENCE_ONE_SEED,
    "paired difference, several seeds": DIFFERENCE_SEEDS,
}
MAX_SEEDS = 100  # the power search stops here: beyond it "more seeds" is no advice
MAX_EXAMPLES = 10_000_000


class StatisticsInputError(RobustftError):
    """A statistics function was given data it cannot use (an empty table, a ragged one, a bad level)."""


@dataclass(frozen=True)
class Spread:
    """The variance components of one paired difference (per example, in accuracy units squared)."""

    seed: float  # between-seed variance of the per-seed true difference
    example: float  # variance of an example's difference that every seed shares
    residual: float  # seed-by-example noise

    def mean_squares(self, seeds: int, n: int) -> tuple[float, float, float]:
        """The expected seed, example and residual mean squares of a seeds x n table with these components."""
        return n * self.seed + self.residual, seeds * self.example + self.residual, self.residual

    def variance_of_mean(self, seeds: int, n: int) -> float:
        return self.seed / seeds + self.example / n + self.residual / (n * seeds)


def mean_squares(d: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Seed, example and residual mean squares of the crossed table(s) d[..., seeds, examples] (needs 2+ of each)."""
    seeds, n = d.shape[-2:]
    seed_means, example_means = d.mean(axis=-1), d.mean(axis=-2)
    grand = seed_means.mean(axis=-1)
    ms_seed = n * seed_means.var(axis=-1, ddof=1)
    ms_example = seeds * example_means.var(axis=-1, ddof=1)
    ss_total = ((d - grand[..., None, None]) ** 2).sum(axis=(-2, -1))
    # the residual sum of squares by subtraction, without building the residual table
    ss_residual = ss_total - (seeds - 1) * ms_seed - (n - 1) * ms_example
    return ms_seed, ms_example, np.maximum(ss_residual, 0.0) / ((seeds - 1) * (n - 1))


def spread_from_mean_squares(ms_seed, ms_example, ms_residual, seeds: int, n: int):
    """Method-of-moments components, a negative estimate pooled to 0 (the usual rule for variance components)."""
    seed = np.maximum((ms_seed - ms_residual) / n, 0.0)
    example = np.maximum((ms_example - ms_residual) / seeds, 0.0)
    return seed, example, ms_residual


def half_width_from_mean_squares(ms_seed, ms_example, ms_residual, seeds: int, n: int, level: float = LEVEL):
    """Half-width and degrees of freedom of the interval from the table's mean squares (arrays or floats).

    The variance of the mean is (MS_seed + max(MS_example - MS_residual, 0)) / (n S): the per-seed means' spread
    plus the shared example part. Its degrees of freedom are Satterthwaite's, floored at S - 1. The half-width is
    never below the t_{S-1} interval of the per-seed means, which is exact for the fixed test set: Satterthwaite's
    df grows with the example part, and at 3 seeds would otherwise let a larger variance give a shorter interval."""
    ms_seed, ms_example, ms_residual = (np.asarray(x, dtype=float) for x in (ms_seed, ms_example, ms_residual))
    shared = np.maximum(ms_example - ms_residual, 0.0)
    total = ms_seed + shared
    denominator = ms_seed**2 / (seeds - 1) + np.where(
        shared > 0, ms_example**2 / (n - 1) + ms_residual**2 / ((seeds - 1) * (n - 1)), 0.0
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        df = np.where(denominator > 0, total**2 / np.where(denominator > 0, denominator, 1.0), np.inf)
    df = np.maximum(df, seeds - 1)
    q = (1 + level) / 2
    pooled = student_t.ppf(q, df) * np.sqrt(total / (n * seeds))
    seeds_only = student_t.ppf(q, seeds - 1) * np.sqrt(ms_seed / (n * seeds))
    return np.maximum(pooled, seeds_only), df


def half_width(spread: Spread, seeds: int, n: int, level: float = LEVEL) -> tuple[float, float]:
    """The half-width (and df) an interval over `seeds` x `n` would have if the tables' mean squares were what
    these components lead one to expect (for projecting to other designs)."""
    width, df = half_width_from_mean_squares(*spread.mean_squares(seeds, n), seeds, n, level)
    return float(width), float(df)


def _check_level(level: float) -> None:
    if not 0 < level < 1:
        raise StatisticsInputError(f"interval level must lie strictly between 0 and 1, got {level}")


def _table(differences: Sequence[Sequence[float]]) -> np.ndarray:
    try:
        d = np.asarray(differences, dtype=float)
    except ValueError as e:  # ragged rows
        raise StatisticsInputError(f"paired differences must be a seeds x examples table with equal rows: {e}") from e
    if d.ndim != 2 or d.shape[0] == 0 or d.shape[1] < 2:
        raise StatisticsInputError(f"paired differences need a seeds x examples table with 2+ examples, got {d.shape}")
    if not np.all(np.isfinite(d)):
        raise StatisticsInputError("paired differences contain a non-finite value")
    return d


def wilson_interval(correct: int, n: int, level: float = LEVEL) -> tuple[float, float]:
    """Wilson's score interval for a binomial proportion correct / n (0/n and n/n keep a width)."""
    if n <= 0:
        raise StatisticsInputError(f"a proportion needs n > 0, got n={n}")
    if not 0 <= correct <= n:
        raise StatisticsInputError(f"a proportion needs 0 <= correct <= n, got {correct} of {n}")
    z = float(norm.ppf((1 + level) / 2))
    p = correct / n
    denom = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # at 0/n and n/n one end is p itself, up to rounding (which must not put p outside its interval)
    return min(max(0.0, center - half), p), max(min(1.0, center + half), p)


def _no_spread_half_width(n: int, level: float) -> float:
    """The half-width of an interval whose data show no spread (every paired value the same): as far as Wilson's
    interval lets the share of the n examples that could differ reach (its upper end at 0 of n), not 0."""
    return wilson_interval(0, n, level)[1]


def _interval(mean: float, half: float, n: int, level: float) -> list[float]:
    if half > 0:
        return [mean - half, mean + half]
    half = _no_spread_half_width(n, level)
    return [max(mean - half, -1.0), min(mean + half, 1.0)]  # a difference of accuracies lies in [-1, 1]


def _one_seed(d: np.ndarray, level: float) -> dict:
    """Example noise only: the paired t-interval over one seed's examples, which says nothing about seeds."""
    n = d.shape[1]
    half = student_t.ppf((1 + level) / 2, n - 1) * d[0].std(ddof=1) / math.sqrt(n)
    mean = float(d.mean())
    return {
        "difference": mean,
        "ci95": _interval(mean, float(half), n, level),
        "n_seeds": 1,
        "n": n,
        "basis": "examples",
        "basis_note": "one seed: an interval over examples only; the seeds' spread is unknown",
        "df": n - 1,
        "spread": None,
        "per_seed": [mean],
    }


def paired_difference_over_seeds(differences: Sequence[Sequence[float]], level: float = LEVEL) -> dict:
    """The mean of a seeds x examples table of paired differences (A - B, the same examples in every row) with an
    interval that counts seeds (module docstring). Keys: difference, ci95, n_seeds, n, basis ("seeds", or
    "examples" with one seed: then no seed-level claim may rest on it), basis_note, df, spread (the components, for
    `what_would_settle`), per_seed (the per-seed mean differences). `ci95` is at `level`."""
    _check_level(level)
    d = _table(differences)
    seeds, n = d.shape
    if seeds == 1:
        return _one_seed(d, level)
    squares = mean_squares(d)
    components = spread_from_mean_squares(*squares, seeds, n)
    half, df = half_width_from_mean_squares(*squares, seeds, n, level)
    mean, half = float(d.mean()), float(half)
    return {
        "difference": mean,
        "ci95": _interval(mean, half, n, level),
        "n_seeds": seeds,
        "n": n,
        "basis": "seeds",
        "basis_note": f"{seeds} seeds x {n} paired examples: seed spread and example noise",
        "df": float(df),
        "spread": asdict(Spread(*(float(c) for c in components))),
        "per_seed": [float(x) for x in d.mean(axis=1)],
    }


def accuracy_interval(correct: int, n: int, level: float = LEVEL) -> list[float]:
    """The interval of one run's accuracy, correct of n: Wilson's (module docstring)."""
    return list(wilson_interval(correct, n, level))


def accuracy_over_seeds(outcomes: Sequence[Sequence[float]], level: float = LEVEL) -> dict:
    """The accuracy over a seeds x examples table of 0/1 outcomes (the same examples in every row), with the keys of
    `paired_difference_over_seeds` ("difference" is the accuracy). One seed: Wilson's interval, the same as that run's
    own (`accuracy_interval`); several: the interval that counts seeds, kept within [0, 1]."""
    _check_level(level)
    d = _table(outcomes)
    seeds, n = d.shape
    if seeds > 1:
        result = paired_difference_over_seeds(d, level)
        return {**result, "ci95": [max(result["ci95"][0], 0.0), min(result["ci95"][1], 1.0)]}
    correct = int(round(float(d.sum())))
    return {
        "difference": correct / n,
        "ci95": accuracy_interval(correct, n, level),
        "n_seeds": 1,
        "n": n,
        "basis": "examples",
        "basis_note": "one seed: an interval over examples only; the seeds' spread is unknown",
        "df": None,
        "spread": None,
        "per_seed": [correct / n],
    }


def spread_from_summaries(per_seed_differences: Sequence[float], within_variances: Sequence[float], n: int) -> Spread:
    """Components from per-seed summaries alone (each seed's mean difference and the variance of its n paired
    differences), when the per-example table is not at hand. The split of the within-seed variance into shared and
    seed-by-example parts is then unknown; taking it all as shared is the conservative choice (it counts the
    residual twice, once in the seeds' spread and once as shared example noise)."""
    diffs, within = np.asarray(per_seed_differences, float), np.asarray(within_variances, float)
    if len(diffs) < 2 or len(within) != len(diffs) or n < 2:
        raise StatisticsInputError(
            f"seed summaries need 2+ seeds with one within-seed variance each and n >= 2 "
            f"(got {len(diffs)} differences, {len(within)} variances, n={n})"
        )
    if np.any(within < 0) or not np.all(np.isfinite(np.concatenate([diffs, within]))):
        raise StatisticsInputError("within-seed variances must be finite and non-negative")
    return Spread(seed=float(diffs.var(ddof=1)), example=float(within.mean()), residual=0.0)
