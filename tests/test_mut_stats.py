"""evaluation/stats.py against independent oracles (the normal closed form, exhaustive enumeration, hand-computed
cases): written to kill the mutants `make mutation` left alive (docs/testing.md)."""

import math

import numpy as np
import pytest
from scipy.stats import norm

from robustft.evaluation import stats


@pytest.mark.parametrize("level", [0.5, 0.8])
def test_bootstrap_interval_at_other_levels_is_the_normal_closed_form(level):
    # n = 2000 values 0..9: the mean's standard error is sqrt(8.25 / 2000); the bootstrap's percentile ends sit at
    # mean -+ z_{(1+level)/2} * se (a lower quantile taken at (1 - level) / 3 would sit a third of an se further out)
    values = list(range(10)) * 200
    se = math.sqrt(8.25 / 2000)
    z = norm.ppf((1 + level) / 2)
    lo, hi = stats.bootstrap_mean_interval(values, level=level, seed=3)
    assert lo == pytest.approx(4.5 - z * se, abs=0.15 * se)
    assert hi == pytest.approx(4.5 + z * se, abs=0.15 * se)


def test_bootstrap_is_seeded_and_its_default_seed_is_0():
    values = [0.1, 0.7, 0.3, 0.9, 0.2]
    first = stats.bootstrap_mean_interval(values, n_boot=200)
    assert first == stats.bootstrap_mean_interval(values, n_boot=200)
    assert first == stats.bootstrap_mean_interval(values, n_boot=200, seed=0)
    assert first != stats.bootstrap_mean_interval(values, n_boot=200, seed=1)


def test_bootstrap_of_one_value_is_that_value_and_of_none_is_refused():
    assert stats.bootstrap_mean_interval([0.7], n_boot=50) == pytest.approx((0.7, 0.7))
    with pytest.raises(ValueError, match="^no values to bootstrap$"):
        stats.bootstrap_mean_interval([])


def test_bootstrap_of_two_values_with_a_single_draw_lies_on_the_three_possible_means():
    lo, hi = stats.bootstrap_mean_interval([0.0, 1.0], n_boot=1, seed=5)
    assert lo == hi and lo in (0.0, 0.5, 1.0)


def test_an_empty_count_has_no_accuracy_and_says_so():
    assert stats.accuracy_from_counts(0, 0) == {"accuracy": None, "n": 0, "correct": 0, "ci95": None}
    assert stats.accuracy_with_interval([]) == {"accuracy": None, "n": 0, "correct": 0, "ci95": None}
    assert stats.accuracy_text({"accuracy": None, "n": 0}) == "- (n=0)"
    assert stats.accuracy_text({"accuracy": None, "n": 12}) == "- (n=12)"
    assert stats.accuracy_text({"accuracy": None}) == "- (n=0)"


def test_accuracy_text_rounds_to_a_tenth_of_a_point():
    assert stats.accuracy_text({"accuracy": 0.12345, "ci95": [0.1, 0.15678], "n": 7}) == "12.3% [10.0, 15.7] (n=7)"


def test_mean_std_of_two_values_has_a_std_and_of_none_is_empty():
    assert stats.mean_std([0.2, 0.4]) == {"mean": pytest.approx(0.3), "std": pytest.approx(math.sqrt(0.02)),
                                          "n_seeds": 2}  # fmt: skip
    assert stats.mean_std([]) == {"mean": None, "std": None, "n_seeds": 0}


def test_majority_baseline_of_nothing_is_empty():
    assert stats.majority_baseline([]) == {"label": None, "accuracy": None, "n": 0}
    assert stats.majority_baseline(iter([3, 3, 1])) == {"label": 3, "accuracy": pytest.approx(2 / 3), "n": 3}


def test_pooled_difference_refuses_anything_but_a_non_empty_table():
    for bad in ([0.1, 0.2], [[[0.1]]], np.zeros((0, 3)), np.zeros((2, 0))):
        with pytest.raises(ValueError, match="^pooled differences need a non-empty seeds x examples table$"):
            stats.pooled_paired_difference(bad)


def test_pooled_difference_of_one_cell_and_of_a_single_draw():
    one = stats.pooled_paired_difference([[1.0]], n_boot=20)
    assert one == {"difference": 1.0, "ci95": [1.0, 1.0], "n_seeds": 1, "n": 1}
    single = stats.pooled_paired_difference([[1.0, 0.0], [0.0, 0.0]], n_boot=1)
    low, high = single["ci95"]
    assert low == high and low in (0.0, 0.25, 0.5, 0.75, 1.0)  # (seed draws x example draws) / 4, one resample


def test_pooled_difference_is_seeded_and_its_default_seed_is_0():
    d = [[1.0, 0.0, -1.0, 1.0], [0.0, 1.0, 1.0, 0.0]]
    first = stats.pooled_paired_difference(d, n_boot=600)
    assert first == stats.pooled_paired_difference(d, n_boot=600, seed=0)
    assert first != stats.pooled_paired_difference(d, n_boot=600, seed=1)


def test_pooled_difference_at_level_one_half_is_the_two_level_normal_closed_form():
    # one seed of n = 2000 values 0..9 (seeds resampled from one: no seed part): ends at mean -+ z_0.75 se
    d = [list(range(10)) * 200]
    se, z = math.sqrt(8.25 / 2000), norm.ppf(0.75)
    r = stats.pooled_paired_difference(d, n_boot=4000, level=0.5, seed=2)
    assert r["ci95"] == [pytest.approx(4.5 - z * se, abs=0.15 * se), pytest.approx(4.5 + z * se, abs=0.15 * se)]


def test_paired_comparison_of_no_examples_is_refused():
    with pytest.raises(ValueError, match="^no paired examples$"):
        stats.paired_comparison([], [])
    with pytest.raises(ValueError, match="differ in length: 2 and 1"):
        stats.paired_comparison([1, 0], [1])


def test_verdict_at_alpha_and_at_no_difference():
    assert stats.verdict(0.1, 0.0499) == "A > B"
    assert stats.verdict(0.0, 0.001) == stats.NO_DIFFERENCE
    assert stats.verdict(-0.1, 0.01, alpha=0.001) == stats.NO_DIFFERENCE
    assert stats.verdict(-0.1, 0.01, names=("RIFT", "PGD")) == "PGD > RIFT"


def test_a_single_paired_example_gets_wilsons_zero_of_one_width_clipped_to_minus_1_1():
    # Wilson's 0 of 1 at 95%: upper end = z^2 / (1 + z^2) = 3.841459 / 4.841459 = 0.793451
    w = 0.793451
    assert stats.paired_comparison([1], [0])["ci95"] == [pytest.approx(1 - w, abs=1e-6), 1.0]
    assert stats.paired_comparison([0], [1])["ci95"] == [-1.0, pytest.approx(-1 + w, abs=1e-6)]
    assert stats.paired_comparison([1], [1])["ci95"] == pytest.approx([-w, w], abs=1e-6)


def test_paired_comparison_takes_float_outcomes_and_reports_both_accuracies():
    r = stats.paired_comparison([1.0, 0.0, 1.0], [0.0, 0.0, 1.0])
    assert (r["a_only"], r["b_only"], r["n"]) == (1, 0, 3)
    assert r["accuracy_a"] == pytest.approx(2 / 3) and r["accuracy_b"] == pytest.approx(1 / 3)
