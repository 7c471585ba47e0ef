"""The AdvGLUE score (evaluation/advglue.py) against hand-computed cases and, for the paired interval, cases whose
bootstrap distribution is known exactly: written to kill the mutants `make mutation` left alive (docs/testing.md)."""

import pytest

from robustft.evaluation import advglue


def test_f1_counts_true_and_false_positives_and_negatives_by_hand():
    # positive 1: tp 2 (idx 0, 1), fp 1 (idx 2), fn 3 (idx 3, 4, 5), tn 1 (idx 6) -> 2*2 / (4 + 1 + 3) = 0.5
    predictions = [1, 1, 1, 0, 0, 0, 0]
    labels = [1, 1, 0, 1, 1, 1, 0]
    assert advglue.f1_score(predictions, labels) == pytest.approx(0.5)
    # positive 0: tp 1 (idx 6), fp 3 (idx 3-5), fn 1 (idx 2) -> 2 / (2 + 3 + 1) = 1/3
    assert advglue.f1_score(predictions, labels, positive=0) == pytest.approx(1 / 3)
    assert advglue.f1_score([1], [1]) == 1.0
    assert advglue.f1_score([0, 1], [1, 0]) == 0.0  # no true positive: 0, though fp and fn exist


def test_a_split_without_f1_scores_its_accuracy_and_its_majority_the_same_way():
    r = advglue.split_score("advglue-rte", [0, 1, 1, 1], [0, 0, 1, 1])
    assert r == {
        "split": "advglue-rte",
        "n": 4,
        "accuracy": 0.75,
        "score": 0.75,
        "majority": {"label": 0, "accuracy": 0.5, "score": 0.5},  # tie 2:2 -> label 0
    }


def test_split_errors_name_the_split_and_the_counts():
    expected = ", ".join(advglue.SPLITS)
    with pytest.raises(ValueError, match=f"^unknown AdvGLUE split 'advglue-cola'; expected one of {expected}$"):
        advglue.split_score("advglue-cola", [0], [0])
    with pytest.raises(ValueError, match="advglue-sst2: 0 predictions for 0 labels"):
        advglue.split_score("advglue-sst2", [], [])
    with pytest.raises(ValueError, match="advglue-sst2: 1 predictions for 2 labels"):
        advglue.split_score("advglue-sst2", [0], [0, 1])


def _all(sst2=([1, 1, 0, 0], [1, 0, 0, 0])):
    return {
        "advglue-sst2": sst2,  # accuracy 3/4
        "advglue-qqp": ([1, 0], [1, 1]),  # accuracy 1/2, F1 2/3 -> 7/12
        "advglue-qnli": ([0, 0], [0, 1]),  # 1/2
        "advglue-rte": ([1], [1]),  # 1
        "advglue-mnli": ([0, 1, 2], [0, 1, 1]),  # 2/3
        "advglue-mnli-mm": ([2, 2], [2, 0]),  # 1/2
    }


def test_overall_score_and_the_majority_score_by_hand():
    r = advglue.official_score(_all())
    tasks = {"sst2": 0.75, "qqp": 7 / 12, "qnli": 0.5, "rte": 1.0, "mnli": (2 / 3 + 1 / 2) / 2}
    assert r["tasks"] == pytest.approx(tasks) and r["missing"] == []
    assert r["score"] == pytest.approx(sum(tasks.values()) / 5)
    # majority: sst2 label 0 -> 3/4; qqp label 1 -> acc 1, F1 1 -> 1; qnli label 0 -> 1/2; rte 1; mnli 1 -> 2/3,
    # mnli-mm tie -> 0 -> 1/2
    majority = {"sst2": 0.75, "qqp": 1.0, "qnli": 0.5, "rte": 1.0, "mnli": (2 / 3 + 1 / 2) / 2}
    assert r["majority_tasks"] == pytest.approx(majority)
    assert r["majority_score"] == pytest.approx(sum(majority.values()) / 5)


def test_mnli_needs_both_halves_and_each_missing_task_is_listed():
    only_matched = {k: v for k, v in _all().items() if k not in ("advglue-mnli-mm", "advglue-qnli")}
    r = advglue.official_score(only_matched)
    assert r["missing"] == ["qnli", "mnli"] and r["score"] is None and r["majority_score"] is None
    assert set(r["tasks"]) == {"sst2", "qqp", "rte"} and set(r["majority_tasks"]) == set(r["tasks"])
    assert set(r["splits"]) == set(only_matched)


def test_paired_difference_where_every_draw_is_the_same():
    # A is right on every example, B wrong on every one: every resample gives A - B = 1 exactly
    a = {s: (y, y) for s, (_, y) in _all().items()}
    b = {s: ([1 - v if s != "advglue-mnli" else (v + 1) % 3 for v in y], y) for s, (_, y) in _all().items()}
    r = advglue.paired_score_difference(a, b, n_boot=30)
    assert r == {"difference": pytest.approx(1.0), "ci95": [pytest.approx(1.0), pytest.approx(1.0)], "detected": True}
    back = advglue.paired_score_difference(b, a, n_boot=30)
    assert back["ci95"] == [pytest.approx(-1.0), pytest.approx(-1.0)] and back["detected"]


def test_paired_difference_interval_is_the_percentile_interval_of_a_two_point_law():
    # A and B differ only on SST-2's two examples, A right on the first and B on the second. A resample of SST-2
    # draws 2 of the 2 examples: both the first (1/4, A - B = +1/5), both the second (1/4, -1/5), one of each
    # (1/2, 0). The 2.5% and 97.5% quantiles are -1/5 and +1/5; the interval holds 0.
    base = _all(sst2=([0, 0], [0, 1]))
    a = {**base, "advglue-sst2": ([0, 0], [0, 1])}
    b = {**base, "advglue-sst2": ([1, 1], [0, 1])}
    r = advglue.paired_score_difference(a, b, n_boot=400, seed=4)
    assert r["difference"] == pytest.approx(0.0)
    assert r["ci95"] == [pytest.approx(-0.2), pytest.approx(0.2)] and not r["detected"]
    assert r == advglue.paired_score_difference(a, b, n_boot=400, seed=4)


def test_paired_difference_default_seed_is_0():
    base = _all(sst2=([0, 0, 1], [0, 1, 1]))
    b = {**base, "advglue-sst2": ([1, 1, 0], [0, 1, 1])}
    assert advglue.paired_score_difference(base, b, n_boot=50) == advglue.paired_score_difference(
        base, b, n_boot=50, seed=0
    )


def test_pooled_difference_over_seeds_averages_them_and_refuses_mismatched_examples():
    good = {s: (y, y) for s, (_, y) in _all().items()}
    worse = _all()
    r = advglue.pooled_score_difference([(good, worse), (good, good)], n_boot=40)
    gap = 1 - advglue.official_score(worse)["score"]
    assert r["difference"] == pytest.approx(gap / 2) and r["n_seeds"] == 2
    assert r["ci95"][0] <= gap / 2 <= r["ci95"][1]
    relabelled = {**good, "advglue-rte": ([1], [0])}
    same = "^paired AdvGLUE scores need the same splits with the same labels in the same order$"
    with pytest.raises(ValueError, match=same):
        advglue.pooled_score_difference([(good, relabelled)])
    with pytest.raises(ValueError, match=same):
        advglue.pooled_score_difference([(good, {k: v for k, v in good.items() if k != "advglue-rte"})])
    with pytest.raises(ValueError, match="^pooled AdvGLUE scores need every seed scored on the same examples$"):
        advglue.pooled_score_difference([(good, good), (relabelled, relabelled)])


def _two_point():
    base = _all(sst2=([0, 0], [0, 1]))
    return {**base, "advglue-sst2": ([0, 0], [0, 1])}, {**base, "advglue-sst2": ([1, 1], [0, 1])}


def test_the_paired_difference_uses_the_draws_and_seed_it_is_given():
    a, b = _two_point()
    one = advglue.paired_score_difference(a, b, n_boot=1, seed=7)
    assert one["ci95"][0] == one["ci95"][1] and one["ci95"][0] in (pytest.approx(-0.2), 0.0, pytest.approx(0.2))
    by_seed = {tuple(advglue.paired_score_difference(a, b, n_boot=1, seed=s)["ci95"]) for s in range(12)}
    assert len(by_seed) > 1  # one draw per seed: different seeds land on different draws


def test_the_documented_defaults_are_2000_draws_and_seed_0():
    a, b = _two_point()
    base = _all(sst2=([0, 1, 1, 0, 1], [0, 1, 0, 0, 1]))
    other = {**base, "advglue-sst2": ([1, 1, 0, 0, 0], [0, 1, 0, 0, 1])}
    assert advglue.paired_score_difference(base, other) == advglue.paired_score_difference(
        base, other, n_boot=2000, seed=0
    )
    assert advglue.pooled_score_difference([(base, other)]) == advglue.pooled_score_difference(
        [(base, other)], n_boot=2000, seed=0
    )


def test_two_seeds_are_resampled_as_seeds():
    # seed 1: A and B equal (A - B = 0); seed 2: A right everywhere, B wrong everywhere (A - B = 1). Every draw's
    # examples leave both differences as they are, so a draw's mean is 0, 1/2 or 1 by which seeds it picked (1/4,
    # 1/2, 1/4): the interval is [0, 1], not the single seed's [0, 0].
    right = {s: (y, y) for s, (_, y) in _all().items()}
    wrong = {s: ([1 - v if s != "advglue-mnli" else (v + 1) % 3 for v in y], y) for s, (_, y) in _all().items()}
    r = advglue.pooled_score_difference([(right, right), (right, wrong)], n_boot=200, seed=1)
    assert r["difference"] == pytest.approx(0.5) and r["ci95"] == [pytest.approx(0.0), pytest.approx(1.0)]
