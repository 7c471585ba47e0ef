"""The seed-counting interval covers the true method difference in 93-97% of simulated studies (3 and 5 seeds, 300
paired binary examples per seed, seed spread from none to dominant with seeds that disagree in sign), and the
intervals it replaces do not. Deterministic (each regime has its own fixed RNG stream) and vectorised."""

import numpy as np
import pytest

from robustft.evaluation import stats
from robustft.evaluation.coverage import (
    REGIMES,
    Regime,
    coverage,
    old_bootstrap_coverage,
    seed_counting_half_widths,
    simulate,
)
from robustft.evaluation.intervals import mean_squares, paired_difference_over_seeds, spread_from_mean_squares

DRAWS = 4000  # the coverage estimate's standard error is then 0.35 points


def _id(r: Regime) -> str:
    return f"{r.seeds}seeds-sd{r.seed_sd}-agree{r.stability}"


@pytest.mark.parametrize("regime", REGIMES, ids=_id)
def test_seed_counting_interval_coverage_is_near_95_percent(regime):
    assert 0.93 <= coverage(regime, DRAWS)["seed_counting"] <= 0.97


def test_coverage_regimes_span_negligible_to_dominant_seed_spread_with_seeds_disagreeing_in_sign():
    assert {r.seeds for r in REGIMES} == {3, 5}
    assert min(r.seed_sd_points() for r in REGIMES) == 0 and max(r.seed_sd_points() for r in REGIMES) > 10
    dominant = Regime(3, 0.4, 0.9)
    assert coverage(dominant, 500)["seeds_disagree_in_sign"] > 0.5


def test_old_two_level_bootstrap_coverage_falls_short_at_3_seeds_with_dominant_seed_spread():
    # 3 seeds have 10 distinct resamples, and the bootstrap's upper end stays near the largest seed
    assert old_bootstrap_coverage(Regime(3, 0.4, 0.9), draws=200) < 0.88


def test_plain_t_over_seed_means_coverage_falls_short_when_seeds_share_the_examples():
    # models that agree across seeds on which examples they get right: the seeds' spread misses the examples' noise
    result = coverage(Regime(5, 0.0, 0.9), 2000)
    assert result["plain_t"] < 0.80 and result["seed_counting"] >= 0.93


def test_coverage_simulates_the_interval_the_report_uses():
    regime = Regime(3, 0.2, 0.9)
    d = simulate(regime, 5, regime.rng())
    vectorised = seed_counting_half_widths(d)
    for study, half in zip(d, vectorised, strict=True):
        low, high = paired_difference_over_seeds(study)["ci95"]
        assert (high - low) / 2 == pytest.approx(half)


def test_simulated_studies_have_the_stated_true_difference_and_seed_spread():
    regime = Regime(5, 0.4, 0.3)
    d = simulate(regime, 4000, regime.rng())
    assert d.mean() == pytest.approx(regime.truth(), abs=0.003)
    seed_variance, _, _ = spread_from_mean_squares(*mean_squares(d.astype(float)), regime.seeds, regime.n)
    assert 100 * np.sqrt(seed_variance.mean()) == pytest.approx(regime.seed_sd_points(), rel=0.05)


def test_issue_53_seeds_plus_5_minus_3_8_plus_3_4_give_the_t_interval_not_the_bootstraps():
    n = 500  # per-seed differences +5.0, -3.8 and +3.4 points over 500 paired examples
    rows = []
    for wins, losses in ((25 + 60, 60), (60 - 19, 60), (17 + 60, 60)):
        rows.append([1.0] * wins + [-1.0] * losses + [0.0] * (n - wins - losses))
    ours = paired_difference_over_seeds(rows)
    old = stats.pooled_paired_difference(rows)
    assert ours["per_seed"] == pytest.approx([0.050, -0.038, 0.034])
    assert ours["ci95"][0] <= -0.1005 and ours["ci95"][1] >= 0.1315  # at least the t-interval [-10.1, +13.2]
    assert old["ci95"][1] < 0.08  # the old upper end barely clears the largest seed's +5.0
