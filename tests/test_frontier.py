"""RIFT against a baseline's best available frontier at matched clean accuracy (the rules registered in
configs/rift-frontier-sst2.yaml): the Pareto envelope, per-example and per-seed interpolation, the one-sided p-value
Holm's correction reads, dominance, and the extension's chooser of bracketing strengths."""

import itertools

import numpy as np
import pytest
from scipy.stats import ttest_1samp

from robustft.errors import RobustftError
from robustft.evaluation.frontier import (
    FrontierPoint,
    bracketing_strengths,
    dominance,
    envelope_weights,
    matched_clean_difference,
    p_below_zero,
    pareto_envelope,
)
from robustft.evaluation.intervals import paired_difference_over_seeds
from robustft.evaluation.multiplicity import holm

# rift-frontier-sst2's PGD under PWWS, seed 0: the 2x and 4x cells lose on both axes to the default
PGD_PWWS = [(0.744, 0.166), (0.785, 0.203), (0.848, 0.208)]


@pytest.mark.parametrize(
    "points, kept",
    [
        (PGD_PWWS, [2]),  # the default beats both stronger settings
        ([(0.744, 0.30), (0.785, 0.25), (0.848, 0.20)], [0, 1, 2]),  # a true trade-off keeps every point
        ([(0.744, 0.166), (0.785, 0.25), (0.848, 0.208)], [1, 2]),  # only 4x is beaten (by 2x)
        ([(0.848, 0.20), (0.744, 0.30), (0.785, 0.30)], [2, 0]),  # equal robust, less clean: 4x is beaten
        ([(0.80, 0.30), (0.80, 0.30), (0.70, 0.40)], [2, 0]),  # of two identical points the first stays
    ],
    ids=["pgd-pwws", "trade-off", "one-dropped", "tie-on-robust", "identical"],
)
def test_the_envelope_drops_points_beaten_on_both_axes(points, kept):
    assert pareto_envelope(points) == kept


def test_the_envelope_matches_a_sweep_from_the_most_accurate_point_on_random_points():
    # independent oracle: walk from the highest clean accuracy down, keeping a point only if it is more robust than
    # every point already walked past (the classic skyline sweep)
    rng = np.random.default_rng(0)
    for _ in range(200):
        points = [(float(c), float(r)) for c, r in rng.integers(0, 8, size=(6, 2)) / 10]
        best, swept = -1.0, []
        for i in sorted(range(len(points)), key=lambda i: (-points[i][0], -points[i][1], i)):
            if points[i][1] > best:
                swept.append(i)
                best = points[i][1]
        assert sorted(pareto_envelope(points)) == sorted(swept), points


def test_weights_interpolate_between_kept_points_and_stay_flat_below_the_lowest_one():
    points = [(0.744, 0.166), (0.785, 0.25), (0.848, 0.208)]  # 4x beaten by 2x
    lam = (0.80 - 0.785) / (0.848 - 0.785)
    weights = envelope_weights(points, 0.80)
    assert weights.keys() == {1, 2} and weights[1] == pytest.approx(1 - lam) and weights[2] == pytest.approx(lam)
    assert envelope_weights(points, 0.76) == {1: 1.0}  # below 2x: 2x is more accurate and more robust than 4x
    assert envelope_weights(PGD_PWWS, 0.809) == {2: 1.0}  # the PGD: the default at RIFT's clean accuracy
    assert envelope_weights(points, 0.848) == {2: 1.0}


@pytest.mark.parametrize("clean", [0.74, 0.85])
def test_the_frontier_is_not_extrapolated_beyond_the_measured_points(clean):
    with pytest.raises(RobustftError, match="outside the frontier's measured clean range 74.4%-84.8%"):
        envelope_weights(PGD_PWWS, clean)


def point(label: str, clean: float, right: list[int], seed: str = "s0") -> FrontierPoint:
    return FrontierPoint(label, clean, {f"e{i}": bool(v) for i, v in enumerate(right)}, seed)


# four attacked examples; a trade-off frontier (every point kept)
LOW, MID, HIGH = point("x4", 0.70, [1, 1, 1, 0]), point("x2", 0.80, [1, 1, 0, 0]), point("x1", 0.90, [1, 0, 0, 0])


def test_the_difference_is_interpolated_per_example_and_per_seed():
    rift = [point("rift", 0.75, [1, 1, 1, 1]), point("rift", 0.85, [1, 1, 0, 1], "s1")]
    result = matched_clean_difference(rift, [[LOW, MID, HIGH], [LOW, MID, HIGH]])
    # by hand: seed 0 halfway between x4 and x2 -> frontier [1, 1, .5, 0]; seed 1 halfway between x2 and x1 ->
    # [1, .5, 0, 0]; so the table is [[0, 0, .5, 1], [0, .5, 0, 1]]
    table = [[0, 0, 0.5, 1], [0, 0.5, 0, 1]]
    assert result["frontier_at"] == pytest.approx([0.625, 0.375])
    assert result["per_seed"] == pytest.approx([0.375, 0.375]) and result["difference"] == pytest.approx(0.375)
    assert result["weights"] == [pytest.approx({"x4": 0.5, "x2": 0.5}), pytest.approx({"x2": 0.5, "x1": 0.5})]
    assert result["ci95"] == pytest.approx(paired_difference_over_seeds(table)["ci95"])  # the project's interval
    # one seed a strength: the frontier's own spread is not carried, and the row says so
    assert not result["frontier_seeds"] and result["carries"] == "RIFT's seeds and example noise only"
    assert "the frontier's own seed spread (x1, x2, x4: one seed)" in result["not_carried"]


def test_a_frontier_with_its_own_seeds_carries_their_spread():
    rift = [point("rift", 0.75, [1, 1, 1, 1]), point("rift", 0.75, [1, 1, 0, 1], "s1")]
    seed1 = [point("x4", 0.70, [1, 0, 1, 1], "s1"), point("x2", 0.80, [0, 1, 1, 0], "s1"), HIGH]
    result = matched_clean_difference(rift, [[LOW, MID, HIGH], seed1])
    # seed 1 against its own models: halfway between [1, 0, 1, 1] and [0, 1, 1, 0] -> [.5, .5, 1, .5], so RIFT's
    # [1, 1, 0, 1] is ahead by [.5, .5, -1, .5], .125 on average (seed 0 as in the test above)
    assert result["per_seed"] == pytest.approx([0.375, 0.125])
    assert result["frontier_seeds"] and "the frontier's seed spread (2 seeds of x2, x4)" in result["carries"]


def test_a_rift_seed_outside_the_frontier_is_named():
    rift = [point("rift", 0.75, [1, 1, 1, 1]), point("rift", 0.95, [1, 1, 0, 1], "s1")]
    with pytest.raises(RobustftError, match=r"RIFT seed 1 \(s1\): clean accuracy 95.0% lies outside"):
        matched_clean_difference(rift, [[LOW, MID, HIGH]] * 2)


@pytest.mark.parametrize(
    "rift, frontiers, words",
    [
        ([], [], "one model per seed"),
        ([point("rift", 0.75, [1, 1, 1, 1])], [[LOW, MID]], "3\\+ strengths"),
        ([point("rift", 0.75, [1, 1, 1, 1])], [[LOW, MID, HIGH]] * 2, "one frontier per RIFT seed"),
        ([point("rift", 1.5, [1, 1, 1, 1])], [[LOW, MID, HIGH]], "model rift: clean accuracy must lie in"),
    ],
    ids=["no-rift", "two-points", "ragged", "bad-clean"],
)
def test_inputs_it_cannot_use_get_a_one_line_error(rift, frontiers, words):
    with pytest.raises(RobustftError, match=words):
        matched_clean_difference(rift, frontiers)


def test_the_one_sided_p_value_is_the_paired_t_test_s_with_one_seed():
    d = np.array([[1, 0, -1, -1, 0, -1, 1, -1, -1, 0, -1, 0]], dtype=float)
    result = paired_difference_over_seeds(d)
    assert p_below_zero(result) == pytest.approx(ttest_1samp(d[0], 0.0, alternative="less").pvalue)


def test_the_one_sided_p_value_agrees_with_the_interval_s_side_of_zero():
    rng = np.random.default_rng(1)
    for _ in range(50):
        d = rng.integers(-1, 2, size=(3, 40)) + rng.normal(0, 0.3, size=(3, 1)) - 0.2
        result = paired_difference_over_seeds(d)
        assert (result["ci95"][1] < 0) == (p_below_zero(result) < 0.025)


@pytest.mark.parametrize(
    "p, rejected",
    [
        # by hand, Holm's step-down at 5% over m = 4: .005 <= .05/4, .01 <= .05/3, then .03 > .05/2 stops
        ({"a": 0.01, "b": 0.04, "c": 0.03, "d": 0.005}, {"a", "d"}),
        ({"x": 0.02, "y": 0.04}, {"x", "y"}),  # .02 <= .025, .04 <= .05 (Bonferroni would keep y)
        ({"x": 0.03, "y": 0.04}, set()),  # .03 > .025 stops before y, although .04 <= .05
        ({"x": 0.05}, {"x"}),  # one component: its own level
        ({"x": 1.0, "y": 0.01, "z": 1.0}, {"y"}),  # components without a result enter as p = 1
    ],
)
def test_holm_rejects_the_textbook_step_down_set(p, rejected):
    assert {name for name, r in holm(p).items() if r} == rejected


def test_holm_keeps_the_familywise_error_where_uncorrected_tests_do_not():
    rng = np.random.default_rng(2)
    draws = rng.uniform(size=(20000, 10))  # ten true nulls
    holm_any = np.mean([any(holm(dict(enumerate(row))).values()) for row in draws[:4000]])
    raw_any = np.mean((draws < 0.05).any(axis=1))
    assert holm_any <= 0.06 and raw_any > 0.35  # 1 - .95^10 = .40


def test_holm_rejects_a_bad_p_value():
    with pytest.raises(RobustftError, match="p-value of b must lie in"):
        holm({"a": 0.1, "b": 1.2})


def right(n: int, k: int, shift: int = 0) -> list[int]:
    """n examples, k of them right (starting at `shift`, wrapping)."""
    return [1 if (i - shift) % n < k else 0 for i in range(n)]


def differences(rift: list[list[int]], base: list[int]) -> list[list[float]]:
    return [[a - b for a, b in zip(r, base, strict=True)] for r in rift]


def test_a_baseline_as_accurate_clean_and_under_attack_dominates():
    # hand-made predictions: 20 clean and 10 attacked examples; the baseline is right on 17 and 5, RIFT's seeds on
    # 16, 15 and 4, 5: RIFT - baseline is -1.5 of 20 clean and -0.5 of 10 attacked
    clean = differences([right(20, 16), right(20, 15, 3)], right(20, 17))
    attack = differences([right(10, 4), right(10, 5, 2)], right(10, 5))
    found = dominance(clean, attack)
    assert found["clean"]["difference"] == pytest.approx(-1.5 / 20)
    assert found["attack"]["difference"] == pytest.approx(-0.5 / 10)
    assert found["dominates"]
    # RIFT ahead under the attack (by 2 of 10): no dominance, whatever the clean side says
    assert not dominance(clean, differences([right(10, 7), right(10, 7, 2)], right(10, 5)))["dominates"]
    # RIFT ahead on clean data: no dominance
    assert not dominance(differences([right(20, 18), right(20, 18, 3)], right(20, 17)), attack)["dominates"]


@pytest.mark.parametrize(
    "target, chosen",
    [(0.8005, ("pgd-x2", "pgd")), (0.78, ("pgd-x4", "pgd-x2")), (0.794, ("pgd-x4", "pgd-x2")), (0.70, None)],
)
def test_the_chooser_returns_the_two_strengths_whose_dev_accuracy_brackets_rift_s(target, chosen):
    dev = {"pgd": 0.844, "pgd-x2": 0.794, "pgd-x4": 0.764}  # rift-frontier-sst2's seed-0 dev accuracies
    assert bracketing_strengths(dev, target) == chosen


def test_the_chooser_reads_the_adjacent_pair_in_dev_order_not_in_strength_order():
    dev = {"x1": 0.80, "x2": 0.85, "x4": 0.70}  # 2x more accurate than the default on dev
    assert bracketing_strengths(dev, 0.82) == ("x1", "x2")
    assert all(bracketing_strengths(dict(p), 0.75) == ("x4", "x1") for p in itertools.permutations(dev.items()))
