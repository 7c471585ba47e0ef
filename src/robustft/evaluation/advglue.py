"""The official AdvGLUE score (Wang et al. 2021) from per-example predictions and labels of each split.

Per task the mean of its metrics: accuracy, except QQP (the mean of accuracy and F1 of the "duplicate"
class); MNLI is the mean of its matched and mismatched scores; the overall score is the mean over SST-2,
QQP, QNLI, RTE and MNLI. The majority-class predictor (the most frequent label of the split itself, an
oracle choice) is scored the same way beside every figure: on 148 SST-2 examples it reaches 51.4%.
All figures are fractions in [0, 1].
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from robustft.evaluation.stats import majority_baseline

SPLITS = ("advglue-sst2", "advglue-qqp", "advglue-qnli", "advglue-rte", "advglue-mnli", "advglue-mnli-mm")
TASKS = ("sst2", "qqp", "qnli", "rte", "mnli")  # the five tasks of the overall score
F1_TASKS = {"advglue-qqp": 1}  # split -> the positive label whose F1 joins accuracy ("duplicate")


def f1_score(predictions: Sequence[int], labels: Sequence[int], positive: int = 1) -> float:
    """F1 of the `positive` class (0 when it is never predicted and never true)."""
    tp = sum(1 for p, y in zip(predictions, labels, strict=True) if p == positive and y == positive)
    fp = sum(1 for p, y in zip(predictions, labels, strict=True) if p == positive and y != positive)
    fn = sum(1 for p, y in zip(predictions, labels, strict=True) if p != positive and y == positive)
    return 2 * tp / (2 * tp + fp + fn) if tp else 0.0


def _metrics(split: str, predictions: Sequence[int], labels: Sequence[int]) -> dict:
    accuracy = sum(p == y for p, y in zip(predictions, labels, strict=True)) / len(labels)
    out = {"accuracy": accuracy}
    if split in F1_TASKS:
        out["f1"] = f1_score(predictions, labels, F1_TASKS[split])
    out["score"] = sum(out.values()) / len(out)
    return out


def split_score(split: str, predictions: Sequence[int], labels: Sequence[int]) -> dict:
    """One AdvGLUE split: n, accuracy (and F1 for QQP), its task score, and the majority baseline's figures."""
    if split not in SPLITS:
        raise ValueError(f"unknown AdvGLUE split {split!r}; expected one of {', '.join(SPLITS)}")
    if len(predictions) != len(labels) or not labels:
        raise ValueError(f"{split}: {len(predictions)} predictions for {len(labels)} labels")
    majority = majority_baseline(labels)
    return {
        "split": split,
        "n": len(labels),
        **_metrics(split, predictions, labels),
        "majority": {"label": majority["label"], **_metrics(split, [majority["label"]] * len(labels), labels)},
    }


def official_score(results: dict[str, tuple[Sequence[int], Sequence[int]]]) -> dict:
    """`results` maps AdvGLUE split names (see SPLITS) to (predictions, labels).

    Returns the per-split figures, the per-task scores (MNLI = mean of matched and mismatched, present only
    with both), the overall score over the five tasks (None unless all five are present) and the majority
    baseline's scores computed the same way."""
    splits = {name: split_score(name, *pair) for name, pair in results.items()}
    tasks, majority_tasks = {}, {}
    for task in TASKS:
        parts = ["advglue-mnli", "advglue-mnli-mm"] if task == "mnli" else [f"advglue-{task}"]
        if all(p in splits for p in parts):
            tasks[task] = sum(splits[p]["score"] for p in parts) / len(parts)
            majority_tasks[task] = sum(splits[p]["majority"]["score"] for p in parts) / len(parts)
    complete = len(tasks) == len(TASKS)
    return {
        "splits": splits,
        "tasks": tasks,
        "score": sum(tasks.values()) / len(TASKS) if complete else None,
        "majority_tasks": majority_tasks,
        "majority_score": sum(majority_tasks.values()) / len(TASKS) if complete else None,
        "missing": [t for t in TASKS if t not in tasks],
    }


def paired_score_difference(
    a: dict[str, tuple[Sequence[int], Sequence[int]]],
    b: dict[str, tuple[Sequence[int], Sequence[int]]],
    n_boot: int = 2000,
    seed: int = 0,
) -> dict:
    """The official score of A minus B, both scored on the same examples of every split (same order), with a 95%
    paired bootstrap interval: each split's examples are resampled, the same draw for both methods, and both
    scores recomputed. The difference counts as detected when the interval excludes 0."""
    result = pooled_score_difference([(a, b)], n_boot=n_boot, seed=seed)
    return {k: result[k] for k in ("difference", "ci95", "detected")}


def pooled_score_difference(
    seeds: list[tuple[dict[str, tuple[Sequence[int], Sequence[int]]], dict[str, tuple[Sequence[int], Sequence[int]]]]],
    n_boot: int = 2000,
    seed: int = 0,
) -> dict:
    """`paired_score_difference` over several training seeds (A and B of each seed scored on the same examples):
    the mean over seeds of the score difference, its interval from resampling the seeds and, within each draw,
    every split's examples (one draw shared by all seeds and both methods)."""
    for a, b in seeds:
        if set(a) != set(b) or any(list(a[s][1]) != list(b[s][1]) for s in a):
            raise ValueError("paired AdvGLUE scores need the same splits with the same labels in the same order")
    labels = {s: list(y) for s, (_, y) in seeds[0][0].items()}
    if any({s: list(y) for s, (_, y) in a.items()} != labels for a, _ in seeds):
        raise ValueError("pooled AdvGLUE scores need every seed scored on the same examples")
    difference = float(np.mean([official_score(a)["score"] - official_score(b)["score"] for a, b in seeds]))
    rng = np.random.default_rng(seed)
    gold = {s: np.asarray(y) for s, y in sorted(labels.items())}
    preds = [({s: np.asarray(a[s][0]) for s in gold}, {s: np.asarray(b[s][0]) for s in gold}) for a, b in seeds]
    draws = []
    for _ in range(n_boot):
        chosen = rng.integers(0, len(seeds), len(seeds)) if len(seeds) > 1 else [0]
        idx = {s: rng.integers(0, len(y), len(y)) for s, y in gold.items()}
        scores = []
        for k in chosen:
            pa, pb = preds[k]
            ra = {s: (pa[s][i].tolist(), gold[s][i].tolist()) for s, i in idx.items()}
            rb = {s: (pb[s][i].tolist(), gold[s][i].tolist()) for s, i in idx.items()}
            scores.append(official_score(ra)["score"] - official_score(rb)["score"])
        draws.append(float(np.mean(scores)))
    low, high = (float(q) for q in np.quantile(draws, [0.025, 0.975]))
    return {"difference": difference, "ci95": [low, high], "detected": not low <= 0.0 <= high, "n_seeds": len(seeds)}
