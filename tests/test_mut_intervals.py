"""evaluation/intervals.py against independent oracles: the two-way ANOVA from its textbook definition (an explicit
residual table, loops), Satterthwaite's formula written out, hand-computed Wilson ends. Written to kill the mutants
that `make mutation` found surviving (docs/testing.md)."""

import math

import numpy as np
import pytest
from scipy.stats import norm
from scipy.stats import t as student_t

from robustft.evaluation import intervals as iv
from robustft.evaluation.intervals import Spread, StatisticsInputError


def _anova(d):
    """The crossed two-way mean squares by definition: sums of squared deviations over explicit loops."""
    seeds, n = len(d), len(d[0])
    grand = sum(sum(row) for row in d) / (seeds * n)
    row_means = [sum(row) / n for row in d]
    col_means = [sum(d[s][i] for s in range(seeds)) / seeds for i in range(n)]
    ss_seed = n * sum((m - grand) ** 2 for m in row_means)
    ss_example = seeds * sum((m - grand) ** 2 for m in col_means)
    ss_res = sum((d[s][i] - row_means[s] - col_means[i] + grand) ** 2 for s in range(seeds) for i in range(n))
    return ss_seed / (seeds - 1), ss_example / (n - 1), ss_res / ((seeds - 1) * (n - 1))


TABLE = [[1, 0, 1, 0, 1], [0, 0, 1, -1, 1], [1, 1, 1, 0, 0]]  # 3 seeds x 5 examples, all three parts non-zero


def test_mean_squares_equal_the_textbook_two_way_anova():
    got = iv.mean_squares(np.asarray(TABLE, dtype=float))
    assert np.allclose(got, _anova(TABLE))


def test_mean_squares_of_a_pure_example_effect_have_no_residual_and_no_seed_part():
    d = np.array([[0.0, 1.0, 1.0, 0.0]] * 3)  # every seed the same: only the example part varies
    ms_seed, ms_example, ms_res = iv.mean_squares(d)
    assert ms_seed == pytest.approx(0) and ms_res == pytest.approx(0)
    assert ms_example == pytest.approx(3 * np.var([0, 1, 1, 0], ddof=1))


def test_spread_from_mean_squares_is_the_method_of_moments_pooled_at_zero():
    # seed = (MS_s - MS_r) / n, example = (MS_e - MS_r) / S
    seed, example, residual = iv.spread_from_mean_squares(2.0, 1.0, 0.5, seeds=3, n=5)
    assert (float(seed), float(example), float(residual)) == pytest.approx((0.3, 0.5 / 3, 0.5))
    seed, example, _ = iv.spread_from_mean_squares(0.1, 0.2, 0.5, seeds=3, n=5)
    assert float(seed) == 0 and float(example) == 0  # negative estimates pooled to 0


def test_spread_expected_mean_squares_and_variance_of_the_mean_by_hand():
    s = Spread(seed=0.01, example=0.2, residual=0.5)
    assert s.mean_squares(3, 100) == pytest.approx((100 * 0.01 + 0.5, 3 * 0.2 + 0.5, 0.5))
    assert s.variance_of_mean(3, 100) == pytest.approx(0.01 / 3 + 0.2 / 100 + 0.5 / 300)


def _satterthwaite(ms_s, ms_e, ms_r, seeds, n, level):
    """Satterthwaite's interval written out on floats; floored at t_{S-1} of the per-seed means."""
    shared = max(ms_e - ms_r, 0.0)
    total = ms_s + shared
    den = ms_s**2 / (seeds - 1)
    if shared > 0:
        den += ms_e**2 / (n - 1) + ms_r**2 / ((seeds - 1) * (n - 1))
    df = max(total**2 / den if den > 0 else math.inf, seeds - 1)
    q = (1 + level) / 2
    pooled = student_t.ppf(q, df) * math.sqrt(total / (n * seeds))
    seeds_only = student_t.ppf(q, seeds - 1) * math.sqrt(ms_s / (n * seeds))
    return max(pooled, seeds_only), df


@pytest.mark.parametrize(
    ("ms", "seeds", "n", "level"),
    [
        ((0.4, 0.9, 0.2), 3, 50, 0.95),  # shared example part > 0
        ((0.4, 0.1, 0.2), 3, 50, 0.95),  # no shared part: df from the seeds alone
        ((0.05, 2.0, 0.1), 5, 20, 0.9),  # example part dominates: df well above S - 1
        ((0.0, 0.0, 0.0), 4, 10, 0.95),  # no spread at all: df infinite, width 0
        ((0.0, 2.0, 0.1), 5, 2, 0.95),  # Satterthwaite's df below 1: floored at S - 1 = 4
    ],
)
def test_half_width_is_satterthwaites_formula(ms, seeds, n, level):
    width, df = iv.half_width_from_mean_squares(*ms, seeds, n, level)
    want_width, want_df = _satterthwaite(*ms, seeds, n, level)
    assert float(width) == pytest.approx(want_width, rel=1e-9, abs=1e-12)
    assert float(df) == pytest.approx(want_df, rel=1e-9)


def test_half_width_never_falls_below_the_per_seed_t_interval():
    # a large shared part raises df to many, so the pooled t quantile falls; the floor keeps t_{S-1} on MS_seed
    ms_s, ms_e, ms_r, seeds, n = 1.0, 1.02, 1.0, 3, 1000
    width, _ = iv.half_width_from_mean_squares(ms_s, ms_e, ms_r, seeds, n)
    assert float(width) == pytest.approx(student_t.ppf(0.975, 2) * math.sqrt(ms_s / (n * seeds)))


def test_half_width_of_a_spread_projects_its_expected_mean_squares():
    s = Spread(seed=0.002, example=0.05, residual=0.2)
    width, df = iv.half_width(s, 3, 400, 0.9)
    want = _satterthwaite(*s.mean_squares(3, 400), 3, 400, 0.9)
    assert (width, df) == pytest.approx(want)
    assert isinstance(width, float) and isinstance(df, float)


@pytest.mark.parametrize("level", [0.0, 1.0, -0.5, 1.5])
def test_a_level_outside_0_1_is_refused(level):
    with pytest.raises(StatisticsInputError, match="level"):
        iv.paired_difference_over_seeds(TABLE, level=level)
    with pytest.raises(StatisticsInputError, match="level"):
        iv.accuracy_over_seeds([[1, 0, 1]], level=level)


@pytest.mark.parametrize(
    ("bad", "words"),
    [
        ([[1.0, 0.0], [1.0]], "equal rows"),
        ([1.0, 0.0, 1.0], "2\\+ examples"),
        (np.zeros((0, 3)), "2\\+ examples"),
        ([[1.0], [0.0]], "2\\+ examples"),
        ([[0.0, math.inf]], "non-finite"),
    ],
)
def test_tables_it_cannot_use_are_refused_with_the_reason(bad, words):
    with pytest.raises(StatisticsInputError, match=words):
        iv.paired_difference_over_seeds(bad)


def test_two_examples_are_enough():
    result = iv.paired_difference_over_seeds([[1.0, 0.0]])
    assert result["n"] == 2 and result["difference"] == 0.5


@pytest.mark.parametrize(
    ("correct", "n", "level", "low", "high"),
    [
        # z(0.90) = 1.644854, z^2 = 2.705543; 3 of 12: centre (0.25 + z^2/24) / (1 + z^2/12) = 0.362731 / 1.225462
        #   = 0.295995; half = z sqrt(0.015625 + 0.004697) / 1.225462 = 1.644854 * 0.142555 / 1.225462 = 0.191343
        (3, 12, 0.90, 0.104652, 0.487338),
        # 0 of 5 at 95%: upper = 2 (z^2/10) / (1 + z^2/5) = 0.768292 / 1.768292 = 0.434482
        (0, 5, 0.95, 0.0, 0.434482),
        (5, 5, 0.95, 1 - 0.434482, 1.0),
    ],
)
def test_wilson_interval_by_hand(correct, n, level, low, high):
    lo, hi = iv.wilson_interval(correct, n, level)
    assert (lo, hi) == pytest.approx((low, high), abs=2e-6)
    assert iv.accuracy_interval(correct, n, level) == pytest.approx([low, high], abs=2e-6)


@pytest.mark.parametrize(
    ("correct", "n", "words"), [(0, 0, "n > 0"), (1, -1, "n > 0"), (-1, 5, "0 <= correct"), (6, 5, "0 <= correct")]
)
def test_wilson_interval_refuses_impossible_counts(correct, n, words):
    with pytest.raises(StatisticsInputError, match=words):
        iv.wilson_interval(correct, n)


def test_wilson_interval_at_the_edges_keeps_p_inside():
    for n in (1, 7, 16, 1000):  # at 16 of 16 the rounded centre + half-width is 1 + 2e-16: clipped to 1
        lo, hi = iv.wilson_interval(n, n)
        assert hi == 1.0 and lo < 1.0
        lo, hi = iv.wilson_interval(0, n)
        assert lo == 0.0 and hi > 0.0


def test_one_seed_is_the_paired_t_over_examples():
    row = [1, 0, 0, 1, 1, 0, 1, 1]  # mean 5/8, sample sd sqrt((5 * (3/8)^2 + 3 * (5/8)^2) / 7)
    sd = math.sqrt((5 * (3 / 8) ** 2 + 3 * (5 / 8) ** 2) / 7)
    half = student_t.ppf(0.975, 7) * sd / math.sqrt(8)
    r = iv.paired_difference_over_seeds([row])
    assert r["difference"] == pytest.approx(5 / 8) and r["ci95"] == pytest.approx([5 / 8 - half, 5 / 8 + half])
    assert (r["n_seeds"], r["n"], r["df"], r["basis"], r["per_seed"]) == (1, 8, 7, "examples", [5 / 8])
    assert r["spread"] is None and "one seed" in r["basis_note"]


def test_several_seeds_give_the_anova_interval_and_its_keys():
    r = iv.paired_difference_over_seeds(TABLE, level=0.9)
    ms = _anova(TABLE)
    width, df = _satterthwaite(*ms, 3, 5, 0.9)
    mean = np.mean(TABLE)
    assert r["difference"] == pytest.approx(mean) and r["ci95"] == pytest.approx([mean - width, mean + width])
    assert r["df"] == pytest.approx(df) and (r["n_seeds"], r["n"], r["basis"]) == (3, 5, "seeds")
    assert r["per_seed"] == pytest.approx([0.6, 0.2, 0.6]) and r["basis_note"].startswith("3 seeds x 5")
    seed, example, residual = (max((ms[0] - ms[2]) / 5, 0), max((ms[1] - ms[2]) / 3, 0), ms[2])
    assert r["spread"] == pytest.approx({"seed": seed, "example": example, "residual": residual})


def test_no_spread_is_widened_to_wilsons_zero_of_n_and_clipped_to_minus_1_1():
    upper0 = iv.wilson_interval(0, 4)[1]  # 0 of 4 at 95%
    same = iv.paired_difference_over_seeds([[0.5, 0.5, 0.5, 0.5]] * 2)
    assert same["ci95"] == pytest.approx([0.5 - upper0, 0.5 + upper0])
    top = iv.paired_difference_over_seeds([[1.0, 1.0, 1.0, 1.0]] * 3)
    assert top["ci95"] == pytest.approx([1 - upper0, 1.0])
    bottom = iv.paired_difference_over_seeds([[-1.0] * 4])
    assert bottom["ci95"] == pytest.approx([-1.0, -1 + upper0])


def test_accuracy_of_one_seed_is_wilsons_and_of_several_is_clipped_to_0_1():
    one = iv.accuracy_over_seeds([[1, 1, 0, 1]], level=0.9)
    assert one["difference"] == 0.75 and one["ci95"] == pytest.approx(list(iv.wilson_interval(3, 4, 0.9)))
    assert (one["n_seeds"], one["n"], one["basis"], one["df"], one["spread"], one["per_seed"]) == (
        1,
        4,
        "examples",
        None,
        None,
        [0.75],
    )
    high = iv.accuracy_over_seeds([[1, 1, 1, 1, 0], [1, 1, 1, 1, 1], [1, 1, 1, 0, 1]])
    raw = iv.paired_difference_over_seeds([[1, 1, 1, 1, 0], [1, 1, 1, 1, 1], [1, 1, 1, 0, 1]])
    assert raw["ci95"][1] > 1 and high["ci95"] == [pytest.approx(raw["ci95"][0]), 1.0]
    low = iv.accuracy_over_seeds([[0, 0, 0, 0, 1], [0, 0, 0, 0, 0], [1, 0, 0, 0, 0]])
    assert low["ci95"][0] == 0.0 and low["n_seeds"] == 3


def test_spread_from_summaries_by_hand_and_its_refusals():
    s = iv.spread_from_summaries([0.1, 0.3, 0.2], [0.2, 0.4, 0.3], n=50)
    assert (s.seed, s.example, s.residual) == pytest.approx((0.01, 0.3, 0.0))
    for args in (([0.1], [0.2], 50), ([0.1, 0.2], [0.2], 50), ([0.1, 0.2], [0.2, 0.2], 1)):
        with pytest.raises(StatisticsInputError, match="2\\+ seeds"):
            iv.spread_from_summaries(*args)
    for diffs, within in (([0.1, 0.2], [0.2, -0.1]), ([0.1, math.nan], [0.2, 0.2]), ([0.1, 0.2], [math.inf, 0.2])):
        with pytest.raises(StatisticsInputError, match="^within-seed variances must be finite and non-negative$"):
            iv.spread_from_summaries(diffs, within, 50)


def test_the_interval_table_names_one_method_per_quantity():
    assert iv.INTERVALS["accuracy, one seed"] == iv.ACCURACY_ONE_SEED and len(set(iv.INTERVALS.values())) == 4
    assert norm.ppf(0.975) == pytest.approx(1.959964, abs=1e-6)  # the z every hand value above uses


def test_spread_from_summaries_at_its_edges_two_examples_and_a_zero_variance():
    s = iv.spread_from_summaries([0.0, 0.5], [0.0, 0.1], n=2)  # seeds' var (ddof 1) of 0, 0.5 = 0.125
    assert (s.seed, s.example, s.residual) == pytest.approx((0.125, 0.05, 0.0))
    with pytest.raises(StatisticsInputError, match="^within-seed variances must be finite and non-negative$"):
        iv.spread_from_summaries([0.1, 0.2], [0.2, -0.1], 50)


def test_two_seeds_of_accuracy_count_seeds_at_the_level_asked():
    table = [[1, 1, 0, 1, 0, 1], [1, 0, 0, 1, 1, 1]]
    r = iv.accuracy_over_seeds(table, level=0.8)
    ms = _anova(table)
    width, _ = _satterthwaite(*ms, 2, 6, 0.8)
    assert r["basis"] == "seeds" and r["n_seeds"] == 2
    assert r["ci95"] == pytest.approx([np.mean(table) - width, np.mean(table) + width])


def test_no_spread_widening_follows_the_level():
    upper = iv.wilson_interval(0, 4, 0.8)[1]  # z(0.9)^2 = 1.642375: 2 (z^2/8) / (1 + z^2/4) = 0.410594 / 1.410594
    assert upper == pytest.approx(0.291078, abs=1e-5)
    same = iv.paired_difference_over_seeds([[0.5] * 4] * 2, level=0.8)
    assert same["ci95"] == pytest.approx([0.5 - upper, 0.5 + upper])
    one = iv.paired_difference_over_seeds([[0.0] * 4], level=0.8)
    assert one["ci95"] == pytest.approx([-upper, upper])


def test_mean_squares_of_stacked_tables_are_each_tables_own():
    # the coverage simulation passes many tables at once, d[..., seeds, examples]
    other = [[0, 1, 1, 1, 0], [1, 1, 0, 0, 0], [0, 0, 1, 1, 1]]
    stacked = iv.mean_squares(np.asarray([TABLE, other], dtype=float))
    for got, table in zip(np.stack(stacked, axis=-1), (TABLE, other), strict=True):
        assert np.allclose(got, _anova(table))
    deeper = iv.mean_squares(np.asarray([[TABLE, other]], dtype=float))
    assert np.asarray(deeper).shape == (3, 1, 2)


def test_one_seed_of_accuracy_says_its_basis():
    assert "one seed" in iv.accuracy_over_seeds([[1, 0, 1]])["basis_note"]


ONE_SEED_NOTE = "one seed: an interval over examples only; the seeds' spread is unknown"


def test_one_seed_notes_are_exact_and_a_missing_outcome_is_named():
    assert iv.accuracy_over_seeds([[1, 0, 1]])["basis_note"] == ONE_SEED_NOTE
    assert iv.paired_difference_over_seeds([[1, 0, 1]])["basis_note"] == ONE_SEED_NOTE
    for bad in ([[0.0, None]], [[0.0, math.nan], [1.0, 1.0]]):  # an unscored example reads as not finite
        with pytest.raises(StatisticsInputError, match="^paired differences contain a non-finite value$"):
            iv.paired_difference_over_seeds(bad)
