"""RIFT against a baseline's clean-vs-robust frontier at RIFT's own clean accuracy (SPEC section 7, matched clean),
by the rules registered in configs/rift-frontier-sst2.yaml (2026-12-07, issue 64 item 2).

A baseline trained at several strengths traces a frontier: stronger adversarial training buys robust accuracy with
clean accuracy. Comparing RIFT with one baseline setting far more (or less) accurate on clean data says little;
comparing it with the frontier at the clean accuracy RIFT reached says whether RIFT moves the frontier.

- Dominance (`dominance`): a baseline model at least as accurate as RIFT both clean and under the attack (point
  estimates, paired on the same examples), with neither seed-aware interval of RIFT - baseline above 0, refutes
  "RIFT > that baseline" without any frontier.
- The best available frontier (`pareto_envelope`, `envelope_weights`): a point beaten on both clean and attacked
  accuracy by another point of the same method is dropped (a stronger setting that loses on both axes is not a
  trade-off); the rest are joined piecewise linearly in clean order. Below the lowest-clean point kept, the
  frontier is flat at that point's robust accuracy: a model that is more accurate clean and more robust is
  available there (the dropped points lay under it). Never extrapolated beyond the measured points' clean range.
- Per example and per seed (`matched_clean_difference`): RIFT seed s is read against the frontier built from the
  baseline's seed-s models (seed 0 where a strength has no seed s), at RIFT seed s's clean accuracy. The frontier's
  value on example i is the weighted mean of the weighted points' 0/1 outcomes there, so d[s, i] = RIFT_s[i] -
  frontier_s[i] is a seeds x examples table of paired differences, and its interval is the project's paired
  seed-aware one (`intervals.paired_difference_over_seeds`). It carries the frontier's own seed spread only where
  every strength it weights has its own model for every RIFT seed; otherwise it carries RIFT's seeds and example
  noise only, and says so (`carries`, `not_carried`).
- One-sided p-values (`p_below_zero`) of "the difference is below 0", from the same interval, feed Holm's
  correction of the joint refutation (`multiplicity.holm`).
- The registered extension's chooser (`bracketing_strengths`): the two strengths whose seed-0 dev accuracy
  brackets RIFT's mean dev accuracy are the ones to train again with seeds 1 and 2.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import t as student_t

from robustft.evaluation.intervals import LEVEL, StatisticsInputError, paired_difference_over_seeds

MIN_FRONTIER_POINTS = 3  # the registered design: the default and two more strengths


@dataclass(frozen=True)
class FrontierPoint:
    """One model (a baseline strength or a RIFT seed): clean accuracy on the whole test split and, per example id of
    the attacked sample, whether it was still right after the attack."""

    label: str
    clean: float
    outcomes: Mapping[str, bool]
    seed: str = "s0"

    @property
    def robust(self) -> float:
        return float(np.mean([bool(v) for v in self.outcomes.values()])) if self.outcomes else float("nan")


def _beaten(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """b beats a: at least as good on both axes and better on one (Pareto); an identical point keeps the first."""
    return b[0] >= a[0] and b[1] >= a[1] and b != a


def pareto_envelope(points: Sequence[tuple[float, float]]) -> list[int]:
    """Indexes of the (clean, robust) points no other point beats, in increasing clean accuracy (so decreasing
    robust accuracy): the best available frontier's vertices. Of identical points the first is kept."""
    kept = [
        i
        for i, p in enumerate(points)
        if not any(_beaten(p, q) for q in points) and all(points[j] != p for j in range(i))
    ]
    return sorted(kept, key=lambda i: points[i][0])


def envelope_weights(points: Sequence[tuple[float, float]], clean: float) -> dict[int, float]:
    """{point index: weight} of the best available frontier at this clean accuracy (module docstring): the two kept
    points around it (weights summing to 1), or the lowest-clean kept point alone below it. Outside the measured
    points' clean range, an error (the frontier is not extrapolated)."""
    if len(points) < 2:
        raise StatisticsInputError(f"a frontier needs 2+ measured points, got {len(points)}")
    low, high = min(p[0] for p in points), max(p[0] for p in points)
    if not low <= clean <= high:
        raise StatisticsInputError(
            f"clean accuracy {100 * clean:.1f}% lies outside the frontier's measured clean range "
            f"{100 * low:.1f}%-{100 * high:.1f}%: the frontier is not extrapolated"
        )
    kept = pareto_envelope(points)
    if clean <= points[kept[0]][0]:
        return {kept[0]: 1.0}
    for left, right in itertools.pairwise(kept):
        (x0, _), (x1, _) = points[left], points[right]
        if x0 <= clean <= x1:
            lam = (clean - x0) / (x1 - x0)
            return {i: w for i, w in ((left, 1.0 - lam), (right, lam)) if w > 0}
    raise AssertionError("unreachable: the highest clean point is always kept")  # pragma: no cover


def _check(rift: Sequence[FrontierPoint], frontiers: Sequence[Sequence[FrontierPoint]]) -> None:
    if not rift:
        raise StatisticsInputError("RIFT needs one model per seed")
    if len(frontiers) != len(rift):
        raise StatisticsInputError(f"one frontier per RIFT seed: got {len(frontiers)} for {len(rift)} seeds")
    for frontier in frontiers:
        if len(frontier) < MIN_FRONTIER_POINTS:
            raise StatisticsInputError(f"a frontier needs {MIN_FRONTIER_POINTS}+ strengths, got {len(frontier)} points")
    for p in [*rift, *itertools.chain.from_iterable(frontiers)]:
        if not 0 <= p.clean <= 1 or not p.outcomes:
            raise StatisticsInputError(f"model {p.label}: clean accuracy must lie in [0, 1] and it needs outcomes")


def _carried(rift: Sequence[FrontierPoint], used: list[list[FrontierPoint]]) -> tuple[bool, str, str]:
    """Whether the interval carries the frontier's own seed spread, and what it carries and does not, in words."""
    if len(rift) == 1:
        return False, "example noise only (one RIFT seed)", "RIFT's and the frontier's seed spread"
    seeds_of: dict[str, list[str]] = {}
    for row in used:
        for p in row:
            seeds_of.setdefault(p.label, []).append(p.seed)
    single = sorted(label for label, seeds in seeds_of.items() if len(set(seeds)) < len(rift))
    if not single:
        strengths = ", ".join(sorted(seeds_of))
        return (
            True,
            f"RIFT's seed spread, the frontier's seed spread ({len(rift)} seeds of {strengths}) and example noise",
            "the choices the design holds fixed (the strengths trained, the attacked sample)",
        )
    return (
        False,
        "RIFT's seeds and example noise only",
        f"the frontier's own seed spread ({', '.join(single)}: one seed), nor the seed-to-seed movement of its "
        "points' clean accuracy",
    )


def matched_clean_difference(
    rift: Sequence[FrontierPoint], frontiers: Sequence[Sequence[FrontierPoint]], level: float = LEVEL
) -> dict:
    """RIFT's accuracy under the attack minus the best available frontier's at RIFT's clean accuracy, seed by seed
    and example by example, with the paired seed-aware interval (module docstring). `frontiers[s]` is the frontier
    RIFT seed `rift[s]` is read against (the baseline's seed-s model at each strength, seed 0 where it has none).

    Keys: those of `intervals.paired_difference_over_seeds` (difference, ci95, n_seeds, n, basis, df, spread,
    per_seed), and frontier_at (the frontier's accuracy at each seed's clean accuracy, on the paired examples),
    weights (per seed, {label: weight}), envelope (per seed, the labels kept), p_below (`p_below_zero`),
    frontier_seeds (whether the frontier's own seed spread is carried), carries and not_carried (in words)."""
    _check(rift, frontiers)
    ids = set.intersection(*(set(p.outcomes) for p in [*rift, *itertools.chain.from_iterable(frontiers)]))
    ids = sorted(ids)
    if len(ids) < 2:
        raise StatisticsInputError(f"RIFT and the frontier share {len(ids)} attacked examples; 2+ are needed")
    table, at, weights, envelopes, used = [], [], [], [], []
    for s, (model, frontier) in enumerate(zip(rift, frontiers, strict=True)):
        pairs = [(p.clean, float(np.mean([p.outcomes[i] for i in ids]))) for p in frontier]
        try:
            w = envelope_weights(pairs, model.clean)
        except StatisticsInputError as err:
            raise StatisticsInputError(f"RIFT seed {s} ({model.seed}): {err}") from None
        value = sum(weight * np.array([float(frontier[k].outcomes[i]) for i in ids]) for k, weight in w.items())
        table.append(np.array([float(model.outcomes[i]) for i in ids]) - value)
        at.append(float(np.mean(value)))
        weights.append({frontier[k].label: weight for k, weight in w.items()})
        envelopes.append([frontier[k].label for k in pareto_envelope(pairs)])
        used.append([frontier[k] for k in w])
    result = paired_difference_over_seeds(table, level)
    carried, carries, not_carried = _carried(rift, used)
    return result | {
        "frontier_at": at,
        "weights": weights,
        "envelope": envelopes,
        "p_below": p_below_zero(result, level),
        "frontier_seeds": carried,
        "carries": carries,
        "not_carried": not_carried,
        "basis_note": f"carries {carries}; not {not_carried}",
    }


def p_below_zero(result: dict, level: float = LEVEL) -> float:
    """The one-sided p-value of "the difference is below 0" that the interval inverts to: its half-width over the
    t quantile of its degrees of freedom is the standard error, so the interval's upper end lies below 0 exactly
    when this p-value is below (1 - level) / 2."""
    low, high = result["ci95"]
    half, difference = (high - low) / 2, result["difference"]
    if half <= 0:  # every paired difference equal: no noise at all
        return 0.0 if difference < 0 else 1.0
    se = half / student_t.ppf((1 + level) / 2, result["df"])
    return float(student_t.cdf(difference / se, result["df"]))


def dominance(clean: Sequence[Sequence[float]], attack: Sequence[Sequence[float]], level: float = LEVEL) -> dict:
    """Whether a baseline model refutes "RIFT > baseline" on its own: `clean` and `attack` are seeds x examples
    tables of paired differences RIFT - baseline (clean test split, attacked sample). It does when both mean
    differences are <= 0 (the baseline at least as accurate on both) and neither seed-aware interval lies above 0."""
    c, a = paired_difference_over_seeds(clean, level), paired_difference_over_seeds(attack, level)
    dominates = c["difference"] <= 0 and a["difference"] <= 0 and c["ci95"][0] <= 0 and a["ci95"][0] <= 0
    return {"clean": c, "attack": a, "dominates": bool(dominates)}


def bracketing_strengths(dev: Mapping[str, float], target: float) -> tuple[str, str] | None:
    """The two strengths (labels) adjacent in dev accuracy whose dev accuracies bracket `target` (RIFT's mean dev
    accuracy), lower first; None when every strength lies on one side of it."""
    if len(dev) < 2:
        raise StatisticsInputError(f"bracketing needs 2+ strengths' dev accuracies, got {len(dev)}")
    ordered = sorted(dev.items(), key=lambda kv: kv[1])
    for (low, x), (high, y) in itertools.pairwise(ordered):
        if x <= target <= y:
            return low, high
    return None
