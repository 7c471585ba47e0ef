"""Statistics every reported accuracy carries (placeholder-free minimal set; extended by the report work)."""

from __future__ import annotations

import math
from collections import Counter


def accuracy_interval(correct: list[bool], z: float = 1.959964) -> list[float]:
    """Wilson 95% interval of an accuracy from per-example outcomes."""
    n = len(correct)
    if n == 0:
        return [0.0, 1.0]
    p = sum(correct) / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return [max(0.0, centre - half), min(1.0, centre + half)]


def majority_baseline(labels: list[int]) -> float:
    """Accuracy of the best constant predictor on these labels."""
    return max(Counter(labels).values()) / len(labels) if labels else 0.0
