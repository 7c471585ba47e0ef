"""RIFT against a baseline's clean-vs-robust frontier at matched clean accuracy."""

import numpy as np
import pytest

from robustft.errors import RobustftError
from robustft.evaluation.frontier import FrontierPoint, matched_clean_difference

FRONTIER = [  # stronger training: less clean, more robust (given out of order on purpose)
    FrontierPoint(0.85, 0.30, 872, 500, "pgd eps=0.02"),
    FrontierPoint(0.80, 0.40, 872, 500, "pgd eps=0.05"),
    FrontierPoint(0.90, 0.20, 872, 500, "pgd eps=0.01"),
]


def test_the_frontier_is_piecewise_linear_in_clean_accuracy():
    rift = [(0.825, 0.40), (0.875, 0.30), (0.85, 0.35)]
    result = matched_clean_difference(FRONTIER, rift)
    assert result["frontier_at"] == pytest.approx([0.35, 0.25, 0.30])
    assert result["per_seed"] == pytest.approx([0.05, 0.05, 0.05]) and result["difference"] == pytest.approx(0.05)
    low, high = result["ci95"]
    assert low < 0.05 < high and (low + high) / 2 == pytest.approx(0.05)  # no seed spread: frontier noise alone
    assert result["basis"] == "seeds" and result["frontier_range"] == [0.80, 0.90]


def test_the_frontier_is_not_extrapolated():
    with pytest.raises(RobustftError, match=r"seed 1's clean accuracy 93.0% lies outside .* 80.0%-90.0%"):
        matched_clean_difference(FRONTIER, [(0.85, 0.3), (0.93, 0.25)])


@pytest.mark.parametrize(
    "frontier, rift, words",
    [
        (FRONTIER[:2], [(0.82, 0.3)], "3\\+ strengths"),
        (FRONTIER + [FrontierPoint(0.85, 0.2, 872, 500)], [(0.82, 0.3)], "share a clean accuracy"),
        (FRONTIER[:2] + [FrontierPoint(1.2, 0.2, 872, 500, "bad")], [(0.82, 0.3)], "frontier point bad"),
        (FRONTIER, [], "one \\(clean, robust\\)"),
        (FRONTIER, [(0.85, 0.3)], "pass n_robust"),
    ],
    ids=["two-points", "duplicate-clean", "out-of-range", "no-rift", "one-seed-no-n"],
)
def test_frontier_inputs_it_cannot_use_get_a_one_line_error(frontier, rift, words):
    with pytest.raises(RobustftError, match=words):
        matched_clean_difference(frontier, rift)


def test_rift_seed_spread_and_frontier_noise_both_widen_the_interval():
    def width(frontier, rift):
        low, high = matched_clean_difference(frontier, rift)["ci95"]
        return high - low

    calm = [(0.84, 0.36), (0.85, 0.35), (0.86, 0.34)]
    spread = [(0.84, 0.30), (0.85, 0.40), (0.86, 0.30)]
    bigger = [FrontierPoint(p.clean, p.robust, 10 * p.n_clean, 10 * p.n_robust) for p in FRONTIER]
    assert width(FRONTIER, spread) > width(FRONTIER, calm) > width(bigger, calm)


def test_one_rift_seed_gets_an_examples_only_interval():
    result = matched_clean_difference(FRONTIER, [(0.85, 0.35)], n_robust=500)
    assert result["basis"] == "examples" and result["seed_variance"] is None
    low, high = result["ci95"]
    assert low < 0.05 < high


def test_frontier_variance_bounds_the_simulated_binomial_noise_of_the_frontier():
    rng = np.random.default_rng(0)
    frontier = [FrontierPoint(p.clean, p.robust, 5000, 500) for p in FRONTIER]  # RIFT stays inside its segments
    rift = [(0.825, 0.40), (0.875, 0.30)]
    result = matched_clean_difference(frontier, rift)
    values = []
    for _ in range(3000):  # redraw every point's clean and robust accuracy (independently) and refit
        noisy = [
            FrontierPoint(rng.binomial(p.n_clean, p.clean) / p.n_clean, rng.binomial(p.n_robust, p.robust) / p.n_robust,
                          p.n_clean, p.n_robust)
            for p in frontier
        ]  # fmt: skip
        values.append(np.mean(matched_clean_difference(noisy, rift)["frontier_at"]))
    simulated = np.var(values)
    # the bound assumes each point's clean and robust errors perfectly correlated; independent ones sit below it
    assert 0.5 * result["frontier_variance"] < simulated <= 1.05 * result["frontier_variance"]
