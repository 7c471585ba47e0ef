"""Intervals, paired tests and baselines against hand-computed values."""

import math

import pytest

from robustft.evaluation import stats


def test_wilson_interval_matches_the_hand_computed_8_of_10():
    # z = 1.959964: centre (0.8 + z^2/20) / (1 + z^2/10) = 0.71674, half-width 0.22657
    lo, hi = stats.wilson_interval(8, 10)
    assert lo == pytest.approx(0.49016, abs=1e-4)
    assert hi == pytest.approx(0.94331, abs=1e-4)


def test_accuracy_interval_matches_the_normal_closed_form_on_a_large_sample():
    n, k = 20_000, 14_000  # p = 0.7: p +- 1.96 sqrt(p(1-p)/n) = 0.7 +- 0.006351
    result = stats.accuracy_from_counts(k, n)
    half = 1.959964 * math.sqrt(0.7 * 0.3 / n)
    assert result["ci95"][0] == pytest.approx(0.7 - half, abs=2e-4)
    assert result["ci95"][1] == pytest.approx(0.7 + half, abs=2e-4)
    assert set(result) == {"accuracy", "n", "correct", "ci95"}  # one interval per number, no second one beside it


def test_accuracy_from_examples_equals_accuracy_from_counts():
    flags = [True, False, True, True, False, True, True, True, False, True] * 7
    from_examples = stats.accuracy_with_interval(flags)
    assert from_examples == stats.accuracy_from_counts(sum(flags), len(flags))
    lo, hi = from_examples["ci95"]
    assert lo < 0.7 < hi


@pytest.mark.parametrize(
    ("correct", "n", "low", "high"),
    [
        # z = 1.959964, z^2 = 3.841459. 0 of 10: upper = (z^2/20 + z sqrt(z^2/400)) / (1 + z^2/10)
        #   = (0.192073 + 0.192073) / 1.384146 = 0.277533
        (0, 10, 0.0, 0.277533),
        (10, 10, 1 - 0.277533, 1.0),
        # 4 of 6: centre (4/6 + z^2/12) / (1 + z^2/6) = 0.986790 / 1.640243 = 0.601612;
        #   half = z sqrt(2/9/6 + z^2/144) / 1.640243 = 1.959964 * 0.252416 / 1.640243 = 0.301618
        (4, 6, 0.299993, 0.903229),
    ],
)
def test_a_run_accuracy_at_the_edges_keeps_its_wilson_width(correct, n, low, high):
    """0 of 10 printed "0.0 [0.0, 0.0]" from the bootstrap, as if certain; Wilson's interval keeps its width."""
    result = stats.accuracy_from_counts(correct, n)
    assert result["ci95"][0] == pytest.approx(low, abs=1e-5)
    assert result["ci95"][1] == pytest.approx(high, abs=1e-5)


def test_the_terminal_summary_of_an_accuracy_prints_wilsons_interval_and_n():
    assert stats.accuracy_text(stats.accuracy_from_counts(4, 6)) == "66.7% [30.0, 90.3] (n=6)"
    assert stats.accuracy_text(stats.accuracy_from_counts(0, 10)) == "0.0% [0.0, 27.8] (n=10)"


def test_a_one_seed_paired_difference_is_the_paired_t_over_examples_and_never_a_point():
    from scipy.stats import t

    a = [1, 1, 0, 1, 0, 1, 1, 1, 0, 1, 1, 0]
    b = [1, 0, 0, 1, 0, 1, 0, 1, 1, 1, 0, 0]
    d = [x - y for x, y in zip(a, b, strict=True)]  # 3 of +1, 1 of -1, 8 of 0: mean 1/6
    mean = sum(d) / 12
    sd = math.sqrt(sum((x - mean) ** 2 for x in d) / 11)
    half = t.ppf(0.975, 11) * sd / math.sqrt(12)
    low, high = stats.paired_comparison(a, b)["ci95"]
    assert low == pytest.approx(mean - half) and high == pytest.approx(mean + half)
    same = stats.paired_comparison([1, 0, 1, 1] * 5, [1, 0, 1, 1] * 5)  # no discordant pair: Wilson's 0 of 20
    upper = stats.wilson_interval(0, 20)[1]
    assert same["ci95"] == pytest.approx([-upper, upper]) and upper > 0.1


def test_a_one_seed_paired_difference_of_few_examples_stays_within_minus_1_and_1():
    # differences 0 and -1: mean -0.5, sd sqrt(0.5), t(0.975, 1) = 12.71, so the t-interval is
    # -0.5 +- 12.71 * 0.5 = [-6.85, 5.85]; a difference of two accuracies lies in [-1, 1]
    assert stats.paired_comparison([1, 0], [1, 1])["ci95"] == [-1.0, 1.0]
    low, high = stats.paired_comparison([1, 1, 0, 1], [1, 1, 1, 1])["ci95"]  # -0.25 +- 3.18 * 0.25: [-1.05, 0.55]
    assert low == -1.0 and high == pytest.approx(-0.25 + 3.182446305284263 * 0.25)


def test_bootstrap_mean_interval_resamples_like_index_resampling():
    # The multinomial shortcut must give the spread of plain index resampling: the standard error of the
    # mean of n values is std/sqrt(n), so the 95% interval of 0..9 repeated (n = 1000) is about +-0.178.
    values = list(range(10)) * 100
    lo, hi = stats.bootstrap_mean_interval(values, seed=0)
    half = 1.959964 * math.sqrt(8.25 / 1000)
    assert lo == pytest.approx(4.5 - half, abs=0.02)
    assert hi == pytest.approx(4.5 + half, abs=0.02)


@pytest.mark.parametrize(
    ("a_only", "b_only", "p_value"),
    [
        (1, 6, 16 / 128),  # 2 * (C(7,0) + C(7,1)) / 2^7
        (0, 6, 2 / 64),
        (0, 5, 2 / 32),
        (3, 3, 1.0),
        (0, 0, 1.0),
    ],
)
def test_exact_mcnemar_on_small_tables(a_only, b_only, p_value):
    assert stats.mcnemar_exact(a_only, b_only) == pytest.approx(p_value)


def test_paired_comparison_counts_discordant_pairs_and_gives_a_verdict():
    # 10 examples: both right on 3, A only on 6, B only on 0, both wrong on 1
    a = [1, 1, 1] + [1] * 6 + [0]
    b = [1, 1, 1] + [0] * 6 + [0]
    result = stats.paired_comparison(a, b, names=("IM", "BERT"))
    assert (result["a_only"], result["b_only"]) == (6, 0)
    assert result["difference"] == pytest.approx(0.6)
    assert result["p_value"] == pytest.approx(2 / 64)
    assert result["verdict"] == "IM > BERT"
    assert result["ci95"][0] > 0
    swapped = stats.paired_comparison(b, a, names=("BERT", "IM"))
    assert swapped["verdict"] == "IM > BERT" and swapped["difference"] == pytest.approx(-0.6)


def test_five_discordant_pairs_are_not_enough():
    a = [1] * 5 + [0] * 5
    b = [0] * 5 + [0] * 5
    assert stats.paired_comparison(a, b)["verdict"] == stats.NO_DIFFERENCE  # p = 0.0625


def test_paired_comparison_rejects_vectors_of_different_length():
    with pytest.raises(ValueError):
        stats.paired_comparison([1, 0], [1])


def test_verdict_follows_the_test_and_the_sign():
    assert stats.verdict(0.02, 0.01) == "A > B"
    assert stats.verdict(-0.02, 0.01) == "B > A"
    assert stats.verdict(0.10, 0.05) == stats.NO_DIFFERENCE  # alpha is strict
    assert stats.verdict(0.02, 0.2, names=("RIFT", "PGD")) == stats.NO_DIFFERENCE


def test_mean_std_over_seeds_uses_the_sample_std():
    result = stats.mean_std([0.8, 0.9, 1.0])
    assert result["mean"] == pytest.approx(0.9)
    assert result["std"] == pytest.approx(0.1)
    assert stats.mean_std([0.5]) == {"mean": 0.5, "std": None, "n_seeds": 1}


def test_majority_baseline_picks_the_most_frequent_label_and_breaks_ties_low():
    assert stats.majority_baseline([0, 1, 1, 2, 1]) == {"label": 1, "accuracy": 0.6, "n": 5}
    assert stats.majority_baseline([2, 0, 2, 0])["label"] == 0


def test_pooled_difference_with_one_seed_is_the_paired_bootstrap_and_seed_spread_widens_it():
    import numpy as np

    from robustft.evaluation.stats import pooled_paired_difference

    rng = np.random.default_rng(0)
    a, b = rng.random(800) < 0.6, rng.random(800) < 0.5
    one = pooled_paired_difference([a.astype(float) - b.astype(float)])
    paired = stats.paired_comparison(a, b)
    assert one["difference"] == paired["difference"] and one["n_seeds"] == 1 and one["n"] == 800
    assert abs(one["ci95"][0] - paired["ci95"][0]) < 0.01 and abs(one["ci95"][1] - paired["ci95"][1]) < 0.01
    same = pooled_paired_difference([a.astype(float) - b.astype(float)] * 3)
    spread = [np.where(rng.random(800) < p, 1.0, 0.0) - b for p in (0.45, 0.6, 0.75)]  # seeds that disagree
    apart = pooled_paired_difference(spread)
    assert same["ci95"][1] - same["ci95"][0] < apart["ci95"][1] - apart["ci95"][0]


def _table(seed_effects, n=400, shared=0.0, seed=0):
    """A seeds x n table of paired differences in {-1, 0, 1}: each seed's mean near its effect; with `shared`, that
    share of examples gives every seed the same outcome (models agreeing across seeds)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    common = rng.choice([-1.0, 0.0, 1.0], size=n, p=[0.2, 0.6, 0.2])
    rows = []
    for effect in seed_effects:
        own = rng.choice([-1.0, 0.0, 1.0], size=n, p=[0.2 - effect / 2, 0.6, 0.2 + effect / 2])
        rows.append(np.where(rng.random(n) < shared, common, own))
    return np.array(rows)


def test_seed_counting_interval_with_identical_seeds_is_the_paired_interval_over_examples():
    from robustft.evaluation.intervals import paired_difference_over_seeds

    row = _table([0.05])[0]
    three = paired_difference_over_seeds([row, row, row])  # seeds agree on every example: only example noise
    one = paired_difference_over_seeds([row])
    assert three["basis"] == "seeds" and one["basis"] == "examples" and "one seed" in one["basis_note"]
    assert three["ci95"] == pytest.approx(one["ci95"])
    assert three["spread"]["seed"] == 0 and three["spread"]["residual"] == pytest.approx(0, abs=1e-12)
    assert one["spread"] is None


def test_seed_counting_interval_widens_with_seed_spread_and_recovers_known_components():
    import numpy as np

    from robustft.evaluation.intervals import paired_difference_over_seeds

    rng = np.random.default_rng(1)
    seeds, n = 40, 2000  # d = u_s + v_i + w_si with variances 0.01, 0.2, 0.5
    d = rng.normal(0, 0.1, (seeds, 1)) + rng.normal(0, 0.2**0.5, (1, n)) + rng.normal(0, 0.5**0.5, (seeds, n))
    spread = paired_difference_over_seeds(d)["spread"]
    assert spread["seed"] == pytest.approx(0.01, rel=0.5) and spread["example"] == pytest.approx(0.2, rel=0.1)
    assert spread["residual"] == pytest.approx(0.5, rel=0.02)
    calm = paired_difference_over_seeds(_table([0.05, 0.05, 0.05]))
    apart = paired_difference_over_seeds(_table([-0.05, 0.05, 0.15]))
    assert np.diff(apart["ci95"])[0] > np.diff(calm["ci95"])[0]


@pytest.mark.parametrize(
    "bad",
    [[], [[]], [[1.0]], [[1.0, 0.0], [1.0]], [[0.0, float("nan")]]],
    ids=["empty", "no-examples", "one", "ragged", "nan"],
)
def test_seed_counting_interval_refuses_tables_it_cannot_use(bad):
    from robustft.errors import RobustftError
    from robustft.evaluation.intervals import paired_difference_over_seeds

    with pytest.raises(RobustftError, match="paired differences"):
        paired_difference_over_seeds(bad)


def test_power_projection_at_the_observed_design_is_the_observed_interval():
    from robustft.evaluation.intervals import Spread, paired_difference_over_seeds
    from robustft.evaluation.power import projected_half_width

    result = paired_difference_over_seeds(_table([0.0, 0.06, 0.12], shared=0.5))
    low, high = result["ci95"]
    projected = projected_half_width(Spread(**result["spread"]), result["n_seeds"], result["n"])
    assert projected == pytest.approx((high - low) / 2, rel=0.05)  # equal unless a component was pooled to 0


def test_power_says_more_examples_cannot_settle_a_seed_dominated_difference():
    from robustft.evaluation.intervals import Spread
    from robustft.evaluation.power import examples_needed, projected_half_width, seeds_needed, what_would_settle

    seedy = Spread(seed=0.05**2, example=0.01, residual=0.3)  # seeds spread by 5 points, little example noise
    assert examples_needed(seedy, 3, target=0.02) is None
    needed = seeds_needed(seedy, 300, target=0.02)  # about 1.96^2 (0.05^2 + 0.3 / 300) / 0.02^2 = 34, and more
    assert needed > 34
    assert projected_half_width(seedy, needed, 300) < 0.02 <= projected_half_width(seedy, needed - 1, 300)
    result = {"difference": 0.02, "n_seeds": 3, "n": 300, "spread": vars(seedy)}
    settle = what_would_settle(result)
    assert settle["examples_per_seed"] is None and "more seeds are needed" in settle["sentence"]
    assert settle["aim"] == "0" and f"about {settle['seeds']} seeds of 300 examples" in settle["sentence"]


def test_power_says_more_seeds_cannot_settle_noise_the_seeds_share():
    from robustft.evaluation.intervals import Spread
    from robustft.evaluation.power import examples_needed, projected_half_width, seeds_needed

    shared = Spread(seed=0.0, example=0.4, residual=0.05)  # the fixed test set's noise: 3.7 points at n=300
    assert seeds_needed(shared, 300, target=0.03) is None
    needed = examples_needed(shared, 3, target=0.03)
    assert projected_half_width(shared, 3, needed) < 0.03 <= projected_half_width(shared, 3, needed - 1)


def test_power_aims_at_ruling_out_the_claim_when_that_is_easier_than_excluding_0():
    from robustft.evaluation.intervals import Spread
    from robustft.evaluation.power import what_would_settle

    result = {"difference": 0.01, "n_seeds": 3, "n": 300, "spread": vars(Spread(0.03**2, 0.2, 0.2))}
    settle = what_would_settle(result, claimed=0.083)
    assert settle["aim"] == "+8.3" and settle["half_width_needed"] == pytest.approx(0.073)
    assert "ruling out the paper's +8.3" in settle["sentence"]


def test_spread_from_seed_summaries_is_never_narrower_than_the_table():
    from robustft.evaluation.intervals import Spread, paired_difference_over_seeds, spread_from_summaries

    d = _table([0.0, 0.05, 0.1], shared=0.3)
    table = paired_difference_over_seeds(d)
    summary = spread_from_summaries(d.mean(axis=1), d.var(axis=1, ddof=1), d.shape[1])
    n, seeds = d.shape[1], d.shape[0]
    assert summary.variance_of_mean(seeds, n) >= Spread(**table["spread"]).variance_of_mean(seeds, n)
    with pytest.raises(Exception, match="2\\+ seeds"):
        spread_from_summaries([0.1], [0.2], 300)


def test_power_asks_for_more_seeds_and_more_examples_when_neither_alone_settles_it():
    from robustft.evaluation.intervals import Spread
    from robustft.evaluation.power import projected_half_width, what_would_settle

    spread = Spread(seed=0.03**2, example=0.2, residual=0.3)  # 7.5 points from 3 seeds, 5 from the shared examples
    settle = what_would_settle({"difference": 0.035, "n_seeds": 3, "n": 300, "spread": vars(spread)}, claimed=0.083)
    assert settle["seeds"] is None and settle["examples_per_seed"] is None
    seeds, n = settle["both"]
    assert seeds > 3 and n > 300 and projected_half_width(spread, seeds, n) < settle["half_width_needed"]
    assert f"about {seeds} seeds of {n:,} paired examples each" in settle["sentence"]
