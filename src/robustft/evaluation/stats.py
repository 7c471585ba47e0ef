"""The statistics every reported number carries: accuracy with a 95% interval, paired comparisons of two
methods on the same examples, mean and std over seeds, and the majority-class baseline.

- Which interval a quantity gets is decided in one place, `intervals` (docs/statistics.md, "One interval per
  number"): a run's accuracy gets Wilson's score interval (`intervals.accuracy_interval`), a function
  of (correct, n) alone, so a run summary without its per-example file gives the same interval, and 0/n or n/n
  keeps a width (a bootstrap of 0/1 values printed "0.0 [0.0, 0.0]" there).
- Two methods on the same examples are compared paired: the paired t-interval of the accuracy difference over
  the examples (the interval the report's overview shows for one seed, `intervals.paired_difference_over_seeds`)
  and the exact McNemar test (a two-sided binomial test on the discordant pairs, scipy.stats.binomtest). The
  per-seed verdict follows the McNemar p-value.
- `bootstrap_mean_interval` (a percentile bootstrap of a mean, one multinomial draw over the distinct values per
  resample) is kept as a tool; no reported number uses it.

Differences over several seeds and the verdicts on published claims live beside this module: `intervals` (an
interval that counts seeds), `power` (the seeds and examples that would settle a question), `verdicts` (the
verdict rule, joint claims) and `frontier` (matched clean accuracy); docs/statistics.md. The two-level bootstrap
below (`pooled_paired_difference`) is kept only as the replaced method the coverage simulation compares against.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np
from scipy.stats import binomtest

from robustft.evaluation.intervals import accuracy_interval, paired_difference_over_seeds, wilson_interval

N_BOOT = 10_000
LEVEL = 0.95
ALPHA = 0.05
NO_DIFFERENCE = "no detectable difference"
BOOT_CHUNK = 500


def bootstrap_mean_interval(
    values: Sequence[float], n_boot: int = N_BOOT, seed: int = 0, level: float = LEVEL
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of `values` (resampling values with replacement)."""
    values = np.asarray(values, dtype=float)
    n = len(values)
    if n == 0:
        raise ValueError("no values to bootstrap")
    distinct, counts = np.unique(values, return_counts=True)
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(n, counts / n, size=n_boot)  # how often each distinct value was resampled
    means = draws @ distinct / n
    lo, hi = np.quantile(means, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def accuracy_with_interval(correct: Sequence[bool]) -> dict:
    """{"accuracy", "n", "correct", "ci95" (Wilson's, `intervals.accuracy_interval`)} of a 0/1 correctness vector."""
    flags = [bool(c) for c in correct]
    return accuracy_from_counts(sum(flags), len(flags))


def accuracy_from_counts(correct: int, n: int) -> dict:
    """The same figures from the count alone."""
    if n == 0:
        return {"accuracy": None, "n": 0, "correct": 0, "ci95": None}
    return {"accuracy": correct / n, "n": n, "correct": correct, "ci95": accuracy_interval(correct, n)}


def accuracy_text(result) -> str:
    """An accuracy as every terminal summary shows it: "66.7% [30.0, 90.3] (n=6)" (Wilson's interval, in %), of
    `accuracy_with_interval`'s dict or an evaluation's metrics (its interval under `accuracy_ci95`)."""
    if result.get("accuracy") is None:
        return f"- (n={result.get('n', 0)})"
    low, high = result["ci95"] if "ci95" in result else result["accuracy_ci95"]
    return f"{100 * result['accuracy']:.1f}% [{100 * low:.1f}, {100 * high:.1f}] (n={result['n']})"


def attack_texts(summary) -> dict[str, str]:
    """An attack summary's accuracies as `accuracy_text` shows them: before and under attack over every counted
    example, the success rate over the attacked ones (the skipped were already wrong)."""
    n, skipped, failed, succeeded = (summary[k] for k in ("num_examples", "num_skipped", "num_failed", "num_succeeded"))
    return {
        "original_accuracy": accuracy_text(accuracy_from_counts(n - skipped, n)),
        "accuracy_under_attack": accuracy_text(accuracy_from_counts(failed, n)),
        "attack_success_rate": accuracy_text(accuracy_from_counts(succeeded, succeeded + failed)),
    }


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts (A right and B wrong; B right and A wrong)."""
    discordant = a_only + b_only
    if discordant == 0:
        return 1.0
    return float(binomtest(a_only, discordant, 0.5, alternative="two-sided").pvalue)


def verdict(difference: float, p_value: float, alpha: float = ALPHA, names: tuple[str, str] = ("A", "B")) -> str:
    """ "A > B", "B > A" or "no detectable difference": the test decides, the sign of the difference says which."""
    a, b = names
    if p_value >= alpha or difference == 0:
        return NO_DIFFERENCE
    return f"{a} > {b}" if difference > 0 else f"{b} > {a}"


def paired_comparison(
    correct_a: Sequence[bool],
    correct_b: Sequence[bool],
    alpha: float = ALPHA,
    names: tuple[str, str] = ("A", "B"),
) -> dict:
    """Methods A and B scored on the same examples (same order): accuracy difference A - B with its paired
    t-interval over the examples (the one `intervals` gives one seed), the exact McNemar p-value and the verdict."""
    if len(correct_a) != len(correct_b):
        raise ValueError(f"paired vectors differ in length: {len(correct_a)} and {len(correct_b)}")
    a = np.asarray(correct_a, dtype=bool)
    b = np.asarray(correct_b, dtype=bool)
    n = len(a)
    if n == 0:
        raise ValueError("no paired examples")
    a_only, b_only = int(np.sum(a & ~b)), int(np.sum(~a & b))
    difference = (a_only - b_only) / n
    p_value = mcnemar_exact(a_only, b_only)
    return {
        "n": n,
        "accuracy_a": float(a.mean()),
        "accuracy_b": float(b.mean()),
        "difference": difference,
        "ci95": _one_seed_interval(a.astype(float) - b.astype(float)),
        "a_only": a_only,
        "b_only": b_only,
        "p_value": p_value,
        "verdict": verdict(difference, p_value, alpha, names),
    }


def _one_seed_interval(d: np.ndarray) -> list[float]:
    if len(d) > 1:
        # A difference of accuracies lies in [-1, 1]; the t-interval of a few examples does not (0 and -1 give
        # [-6.85, 5.85]). Clipped here, not in `intervals`, whose ci95 width `frontier.p_below_zero` inverts.
        low, high = paired_difference_over_seeds([d])["ci95"]
        return [max(low, -1.0), min(high, 1.0)]
    half = wilson_interval(0, 1)[1]  # one example: nothing to estimate a spread from
    return [max(float(d[0]) - half, -1.0), min(float(d[0]) + half, 1.0)]


def pooled_paired_difference(
    differences: Sequence[Sequence[float]], n_boot: int = N_BOOT, seed: int = 0, level: float = LEVEL
) -> dict:
    """Methods A and B over several training seeds, each seed scored on the same examples: `differences[s][i]` is
    A's minus B's correctness on example i for seed s. The mean difference with a two-level bootstrap interval:
    seeds and examples both resampled (the same examples for every drawn seed), so the interval carries the
    training seeds' spread as well as the examples' (with one seed it is the paired bootstrap over examples).

    Superseded by `intervals.paired_difference_over_seeds`: with 3 seeds this bootstrap has 10 distinct seed
    resamples, its upper end stays near the largest seed, and it covers 78-85% when the seeds' spread dominates
    (docs/statistics.md)."""
    d = np.asarray(differences, dtype=float)
    if d.ndim != 2 or d.size == 0:
        raise ValueError("pooled differences need a non-empty seeds x examples table")
    seeds, n = d.shape
    rng = np.random.default_rng(seed)
    means = []
    for start in range(0, n_boot, BOOT_CHUNK):  # chunks keep the draws' memory at BOOT_CHUNK x n
        size = min(BOOT_CHUNK, n_boot - start)
        seed_draws = rng.multinomial(seeds, np.full(seeds, 1 / seeds), size=size)  # how often each seed is drawn
        example_draws = rng.multinomial(n, np.full(n, 1 / n), size=size)
        means.append(np.einsum("bs,si,bi->b", seed_draws, d, example_draws) / (seeds * n))
    low, high = np.quantile(np.concatenate(means), [(1 - level) / 2, (1 + level) / 2])
    return {"difference": float(d.mean()), "ci95": [float(low), float(high)], "n_seeds": seeds, "n": n}


def mean_std(values: Sequence[float]) -> dict:
    """Mean and sample standard deviation (ddof 1; None for a single value) over seeds."""
    values = [float(v) for v in values]
    if not values:
        return {"mean": None, "std": None, "n_seeds": 0}
    std = float(np.std(values, ddof=1)) if len(values) > 1 else None
    return {"mean": float(np.mean(values)), "std": std, "n_seeds": len(values)}


def majority_baseline(labels: Sequence[int]) -> dict:
    """Accuracy of always predicting the most frequent label (ties: the smallest label id)."""
    labels = list(labels)
    if not labels:
        return {"label": None, "accuracy": None, "n": 0}
    counts = Counter(labels)
    label = min(counts, key=lambda k: (-counts[k], k))
    return {"label": label, "accuracy": counts[label] / len(labels), "n": len(labels)}
