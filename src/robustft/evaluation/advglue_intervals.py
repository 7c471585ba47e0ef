"""The official AdvGLUE score difference over seeds with the seed-counting interval (`intervals`).

The official score is a weighted mean of split scores (a task is 1/5 of it, MNLI's matched and mismatched splits
1/10 each), and a split score is a mean of per-example values: correctness for accuracy, and for QQP's F1 of the
"duplicate" class its linearisation (F1 = 2 TP / (predicted + true positives) is a ratio of means; its per-example
value F1 + (2 tp_i - F1 (pp_i + ap_i)) / (mean pp + mean ap) averages to F1 exactly and has the ratio's
delta-method variance). Scaling each example's value by its split's weight over its split's size (times the total
number of examples) makes the score difference the plain mean of one seeds x examples table, which
`intervals.paired_difference_over_seeds` then reads. Pooling the splits' examples into one table adds the spread
between splits' mean contributions to the example noise, which errs on the wide side.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from robustft.evaluation.advglue import F1_TASKS, official_score
from robustft.evaluation.intervals import LEVEL, StatisticsInputError, paired_difference_over_seeds

Scored = dict[str, tuple[Sequence[int], Sequence[int]]]  # split -> (predictions, labels)


def _weight(split: str) -> float:
    return 1 / 10 if split in ("advglue-mnli", "advglue-mnli-mm") else 1 / 5


def example_values(split: str, predictions: Sequence[int], labels: Sequence[int]) -> np.ndarray:
    """Per-example values whose mean is the split's score (module docstring)."""
    pred, gold = np.asarray(predictions), np.asarray(labels)
    correct = (pred == gold).astype(float)
    if split not in F1_TASKS:
        return correct
    positive = F1_TASKS[split]
    tp, pp, ap = ((pred == positive) & (gold == positive)), (pred == positive), (gold == positive)
    denominator = pp.mean() + ap.mean()
    if denominator == 0:  # no positive predicted or true: F1 is 0 and does not move with any one example
        return correct / 2
    f1 = 2 * tp.mean() / denominator
    return (correct + f1 + (2 * tp - f1 * (pp.astype(float) + ap)) / denominator) / 2


def _contributions(scored: Scored, splits: list[str]) -> np.ndarray:
    total = sum(len(scored[s][1]) for s in splits)
    parts = [example_values(s, *scored[s]) * _weight(s) * total / len(scored[s][1]) for s in splits]
    return np.concatenate(parts)


def score_difference_over_seeds(seeds: Sequence[tuple[Scored, Scored]], level: float = LEVEL) -> dict:
    """A's official score minus B's over seeds (each pair scored on the same examples of all six splits), with the
    seed-counting interval; the keys of `intervals.paired_difference_over_seeds` (difference is the exact mean of
    the per-seed official score differences)."""
    if not seeds:
        raise StatisticsInputError("an AdvGLUE score difference needs at least one seed with both methods scored")
    splits = sorted(seeds[0][0])
    for a, b in seeds:
        if sorted(a) != splits or sorted(b) != splits or any(list(a[s][1]) != list(b[s][1]) for s in splits):
            raise StatisticsInputError("paired AdvGLUE scores need the same splits with the same labels in every seed")
        missing = official_score(a)["missing"]
        if missing:
            raise StatisticsInputError(f"the official score needs all five tasks; missing {', '.join(missing)}")
    table = [_contributions(a, splits) - _contributions(b, splits) for a, b in seeds]
    result = paired_difference_over_seeds(table, level)
    exact = [official_score(a)["score"] - official_score(b)["score"] for a, b in seeds]
    shift = float(np.mean(exact)) - result["difference"]  # 0 up to rounding: the values average to the scores
    return {
        **result,
        "difference": result["difference"] + shift,
        "ci95": [x + shift for x in result["ci95"]],
        "per_seed": exact,
    }
