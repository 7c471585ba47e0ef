"""The AdvGLUE official score difference over seeds, read as one seeds x examples table."""

import numpy as np
import pytest
from scipy.stats import t as student_t

from robustft.errors import RobustftError
from robustft.evaluation import advglue
from robustft.evaluation.advglue_intervals import example_values, score_difference_over_seeds

SIZES = {"advglue-sst2": 60, "advglue-qqp": 50, "advglue-qnli": 60, "advglue-rte": 40}
SIZES.update({"advglue-mnli": 45, "advglue-mnli-mm": 45})


def _scored(rng, accuracy):
    """Every split scored with predictions right with probability `accuracy` (same labels for every call)."""
    out = {}
    for split, n in SIZES.items():
        k = 3 if "mnli" in split else 2
        labels = [i % k for i in range(n)]
        wrong = rng.random(n) > accuracy
        out[split] = ([(y + 1) % k if w else y for y, w in zip(labels, wrong, strict=True)], labels)
    return out


def test_example_values_average_to_the_split_scores_including_qqp_f1():
    rng = np.random.default_rng(0)
    scored = _scored(rng, 0.7)
    for split, (pred, gold) in scored.items():
        score = advglue.split_score(split, pred, gold)["score"]
        assert example_values(split, pred, gold).mean() == pytest.approx(score)


def test_linearised_f1_has_the_bootstrap_variance_of_f1():
    rng = np.random.default_rng(1)
    gold = rng.integers(0, 2, 400)
    pred = np.where(rng.random(400) < 0.75, gold, 1 - gold)
    values = 2 * example_values("advglue-qqp", pred, gold) - (pred == gold)  # the F1 part alone
    draws = [advglue.f1_score(pred[i], gold[i]) for i in (rng.integers(0, 400, 400) for _ in range(2000))]
    assert values.var(ddof=1) / 400 == pytest.approx(np.var(draws), rel=0.15)


def test_score_difference_over_seeds_is_the_mean_official_difference_with_a_seed_counting_interval():
    rng = np.random.default_rng(2)
    seeds = [(_scored(rng, a), _scored(rng, 0.6)) for a in (0.75, 0.55, 0.72)]  # seeds that disagree
    result = score_difference_over_seeds(seeds)
    exact = [advglue.official_score(a)["score"] - advglue.official_score(b)["score"] for a, b in seeds]
    assert result["per_seed"] == pytest.approx(exact) and result["difference"] == pytest.approx(np.mean(exact))
    t_half = student_t.ppf(0.975, 2) * np.std(exact, ddof=1) / np.sqrt(3)
    low, high = result["ci95"]
    assert result["basis"] == "seeds" and high - low >= 2 * t_half - 1e-9
    one = score_difference_over_seeds(seeds[:1])
    assert one["basis"] == "examples" and one["difference"] == pytest.approx(exact[0])


def test_score_difference_over_seeds_refuses_unpaired_or_incomplete_scores():
    rng = np.random.default_rng(3)
    a, b = _scored(rng, 0.7), _scored(rng, 0.6)
    with pytest.raises(RobustftError, match="same splits"):
        score_difference_over_seeds([(a, {"advglue-sst2": b["advglue-sst2"]})])
    partial = {s: v for s, v in a.items() if s != "advglue-rte"}
    with pytest.raises(RobustftError, match="all five tasks"):
        score_difference_over_seeds([(partial, partial)])
