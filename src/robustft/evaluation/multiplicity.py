"""Holm's step-down correction for a joint refutation over several components (Holm 1979).

A joint claim that must hold for every component is refuted when at least one component is shown to fail. Testing
each of m components at level alpha and refuting on any rejection has a familywise error of up to m * alpha; Holm's
procedure keeps it at alpha under any dependence between the tests: order the p-values p_(1) <= ... <= p_(m),
reject H_(k) while p_(k) <= alpha / (m - k + 1), and stop at the first that is not rejected.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from robustft.evaluation.intervals import StatisticsInputError

FAMILYWISE = 0.05  # the registered familywise level of the joint refutation (configs/rift-frontier-sst2.yaml)


def holm(p_values: Mapping[str, float], alpha: float = FAMILYWISE) -> dict[str, bool]:
    """{name: rejected after Holm's correction at familywise level alpha} for every name in p_values."""
    if not 0 < alpha < 1:
        raise StatisticsInputError(f"Holm's familywise level must lie strictly between 0 and 1, got {alpha}")
    for name, p in p_values.items():
        if not (isinstance(p, int | float) and not math.isnan(p) and 0 <= p <= 1):
            raise StatisticsInputError(f"p-value of {name} must lie in [0, 1], got {p!r}")
    levels = holm_thresholds(p_values, alpha)
    rejected = dict.fromkeys(p_values, False)
    for name in levels:  # in Holm's order
        if p_values[name] > levels[name]:
            break  # step-down: every larger p-value stays unrejected
        rejected[name] = True
    return rejected


def holm_thresholds(p_values: Mapping[str, float], alpha: float = FAMILYWISE) -> dict[str, float]:
    """The level each component's p-value is compared with, in Holm's order (alpha / (m - rank)): what `holm`
    tests and the report prints."""
    ordered = sorted(p_values, key=lambda name: p_values[name])
    return {name: alpha / (len(ordered) - k) for k, name in enumerate(ordered)}
