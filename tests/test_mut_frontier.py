"""The frontier comparison at its boundaries, against hand-computed envelopes, weights and t-intervals (docs/testing.md,
mutation testing of evaluation/frontier.py): ties at the ends of the clean range, two points or two examples, a level
other than 0.95, the exact sentences and keys."""

import math

import pytest
from scipy.stats import t as student_t

from robustft.errors import RobustftError
from robustft.evaluation.frontier import (
    FrontierPoint,
    bracketing_strengths,
    dominance,
    envelope_weights,
    matched_clean_difference,
    p_below_zero,
)


def point(label, clean, right, seed="s0"):
    return FrontierPoint(label, clean, {f"e{i}": bool(v) for i, v in enumerate(right)}, seed)


LOW, MID, HIGH = point("x4", 0.70, [1, 1, 1, 0]), point("x2", 0.80, [1, 1, 0, 0]), point("x1", 0.90, [1, 0, 0, 0])


def t_interval(d, level):
    """The textbook paired t-interval over one seed's examples, and its one-sided p-value of mean < 0."""
    n = len(d)
    mean = sum(d) / n
    se = math.sqrt(sum((x - mean) ** 2 for x in d) / (n - 1) / n)
    half = student_t.ppf((1 + level) / 2, n - 1) * se
    return mean, [mean - half, mean + half], float(student_t.cdf(mean / se, n - 1))


def test_one_rift_seed_at_level_0_8_is_the_hand_t_interval_with_its_words():
    rift = [point("rift", 0.75, [1, 0, 1, 1])]
    result = matched_clean_difference(rift, [[LOW, MID, HIGH]], level=0.8)
    # halfway between x4 [1, 1, 1, 0] and x2 [1, 1, 0, 0]: the frontier is [1, 1, .5, 0]; RIFT - frontier by hand
    mean, ci, p = t_interval([0.0, -1.0, 0.5, 1.0], 0.8)
    assert result["difference"] == pytest.approx(mean) and result["ci95"] == pytest.approx(ci)
    assert result["p_below"] == pytest.approx(p)
    assert result["envelope"] == [["x4", "x2", "x1"]]
    assert result["frontier_seeds"] is False
    assert result["carries"] == "example noise only (one RIFT seed)"
    assert result["not_carried"] == "RIFT's and the frontier's seed spread"
    assert result["basis_note"] == (
        "carries example noise only (one RIFT seed); not RIFT's and the frontier's seed spread"
    )


def test_the_envelope_key_lists_the_kept_labels_in_clean_order():
    beaten = point("x2", 0.80, [1, 0, 0, 0])  # robust .25 at clean .80: beaten by x1 (.90, .25)
    low = point("x4", 0.70, [1, 1, 0, 1])
    result = matched_clean_difference([point("rift", 0.75, [1, 1, 1, 1])], [[HIGH, beaten, low]])
    assert result["envelope"] == [["x4", "x1"]]
    # .75 lies a quarter of the way from x4 (.70) to x1 (.90)
    assert result["weights"] == [pytest.approx({"x4": 0.75, "x1": 0.25})]


def test_two_seeds_with_their_own_frontier_seeds_say_exactly_what_they_carry():
    rift = [point("rift", 0.75, [1, 1, 1, 1]), point("rift", 0.75, [1, 1, 0, 1], "s1")]
    seed1 = [point("x4", 0.70, [1, 0, 1, 1], "s1"), point("x2", 0.80, [0, 1, 1, 0], "s1"), HIGH]
    result = matched_clean_difference(rift, [[LOW, MID, HIGH], seed1])
    assert result["carries"] == ("RIFT's seed spread, the frontier's seed spread (2 seeds of x2, x4) and example noise")
    assert result["not_carried"] == "the choices the design holds fixed (the strengths trained, the attacked sample)"
    single = matched_clean_difference(rift, [[LOW, MID, HIGH], [LOW, MID, HIGH]])
    assert single["not_carried"] == (
        "the frontier's own seed spread (x2, x4: one seed), nor the seed-to-seed movement of its points' clean accuracy"
    )


def test_clean_accuracies_of_exactly_0_and_1_are_accepted():
    zero, one = point("x4", 0.0, [1, 1, 1, 1]), point("x1", 1.0, [0, 0, 0, 0])
    at_one = matched_clean_difference([point("rift", 1.0, [1, 0, 1, 0])], [[zero, MID, one]])
    assert at_one["weights"] == [{"x1": 1.0}] and at_one["difference"] == pytest.approx(0.5)
    at_zero = matched_clean_difference([point("rift", 0.0, [1, 0, 1, 0])], [[zero, MID, one]])
    assert at_zero["weights"] == [{"x4": 1.0}] and at_zero["difference"] == pytest.approx(-0.5)


def test_two_shared_examples_are_enough_and_one_is_not():
    rift = [FrontierPoint("rift", 0.75, {"e0": True, "e2": False})]
    result = matched_clean_difference(rift, [[LOW, MID, HIGH]])
    # on e0 and e2, x2 (.80, .5) is beaten by x1 (.90, .5): the frontier at .75 is .75 x4 + .25 x1 = [1, .75], so
    # RIFT - frontier = [0, -.75]
    assert result["envelope"] == [["x4", "x1"]]
    assert result["n"] == 2 and result["difference"] == pytest.approx(-0.375)
    with pytest.raises(RobustftError, match=r"^RIFT and the frontier share 1 attacked examples; 2\+ are needed$"):
        matched_clean_difference([FrontierPoint("rift", 0.75, {"e0": True})], [[LOW, MID, HIGH]])


def test_no_rift_seed_gets_its_exact_message():
    with pytest.raises(RobustftError, match=r"^RIFT needs one model per seed$"):
        matched_clean_difference([], [])


def test_envelope_weights_at_the_ends_of_the_range_and_with_two_points():
    two = [(0.6, 0.5), (0.8, 0.3)]
    assert envelope_weights(two, 0.6) == {0: 1.0}  # the lowest clean accuracy measured is inside the range
    assert envelope_weights(two, 0.7) == pytest.approx({0: 0.5, 1: 0.5})
    assert envelope_weights(two, 0.8) == {1: 1.0}
    # one point kept (the most accurate beats the others) and RIFT exactly at its clean accuracy
    assert envelope_weights([(0.744, 0.166), (0.785, 0.203), (0.848, 0.208)], 0.848) == {2: 1.0}
    with pytest.raises(RobustftError, match=r"^a frontier needs 2\+ measured points, got 1$"):
        envelope_weights([(0.6, 0.5)], 0.6)


def test_p_below_zero_without_noise_is_0_or_1_by_the_sign():
    def result(d):
        return {"difference": d, "ci95": [d, d], "df": 3}

    assert p_below_zero(result(-0.2)) == 0.0
    assert p_below_zero(result(0.0)) == 1.0  # a difference of exactly 0 is not below 0
    assert p_below_zero(result(0.3)) == 1.0


def test_dominance_at_exact_ties_and_at_level_0_8():
    # one seed, 4 examples: RIFT - baseline sums to 0 on clean data and under the attack
    tie = [[1.0, -1.0, 0.0, 0.0]]
    found = dominance(tie, tie)
    assert found["clean"]["difference"] == 0.0 and found["attack"]["difference"] == 0.0
    assert found["dominates"] is True  # as accurate on both axes: "RIFT > baseline" is refuted
    behind = [[0.0, -1.0, 1.0, -1.0]]
    at_08 = dominance(tie, behind, level=0.8)
    for side, d in (("clean", tie[0]), ("attack", behind[0])):
        mean, ci, _ = t_interval(d, 0.8)
        assert at_08[side]["difference"] == pytest.approx(mean) and at_08[side]["ci95"] == pytest.approx(ci)


def test_bracketing_with_two_strengths_and_a_target_at_a_strength():
    dev = {"x1": 0.84, "x2": 0.79}
    assert bracketing_strengths(dev, 0.80) == ("x2", "x1")
    assert bracketing_strengths(dev, 0.79) == ("x2", "x1")  # at the lower end: still bracketed
    assert bracketing_strengths(dev, 0.84) == ("x2", "x1")
    assert bracketing_strengths(dev, 0.85) is None
    with pytest.raises(RobustftError, match=r"^bracketing needs 2\+ strengths' dev accuracies, got 1$"):
        bracketing_strengths({"x1": 0.84}, 0.8)
