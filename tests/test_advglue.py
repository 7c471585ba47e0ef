"""The official AdvGLUE score against hand-computed values."""

import pytest

from robustft.evaluation import advglue

# Small hand-scored splits: (predictions, labels)
RESULTS = {
    "advglue-sst2": ([1, 0, 1, 1], [1, 0, 0, 1]),  # accuracy 3/4
    "advglue-qqp": ([1, 1, 0, 0, 1], [1, 0, 0, 1, 1]),  # accuracy 3/5; tp 2, fp 1, fn 1: F1 4/6
    "advglue-qnli": ([0, 1], [0, 0]),  # 1/2
    "advglue-rte": ([1], [1]),  # 1
    "advglue-mnli": ([0, 1, 2], [0, 1, 1]),  # 2/3
    "advglue-mnli-mm": ([2, 2], [2, 0]),  # 1/2
}


def test_qqp_scores_the_mean_of_accuracy_and_f1():
    qqp = advglue.split_score("advglue-qqp", *RESULTS["advglue-qqp"])
    assert qqp["accuracy"] == pytest.approx(0.6)
    assert qqp["f1"] == pytest.approx(4 / 6)
    assert qqp["score"] == pytest.approx((0.6 + 4 / 6) / 2)
    # majority label 1 (3 of 5): accuracy 3/5, F1 2*3 / (2*3 + 2 + 0) = 0.75
    assert qqp["majority"] == pytest.approx({"label": 1, "accuracy": 0.6, "f1": 0.75, "score": 0.675})


def test_official_score_averages_mnli_halves_then_the_five_tasks():
    result = advglue.official_score(RESULTS)
    assert result["tasks"]["mnli"] == pytest.approx((2 / 3 + 1 / 2) / 2)
    assert result["tasks"]["sst2"] == pytest.approx(0.75)
    expected = (0.75 + (0.6 + 4 / 6) / 2 + 0.5 + 1.0 + (2 / 3 + 1 / 2) / 2) / 5
    assert result["score"] == pytest.approx(expected)  # 0.69333
    assert result["missing"] == []
    assert result["splits"]["advglue-sst2"]["majority"]["label"] == 0  # tie 2:2 -> the smaller label


def test_no_overall_score_without_all_five_tasks():
    partial = {k: v for k, v in RESULTS.items() if k != "advglue-mnli-mm"}
    result = advglue.official_score(partial)
    assert result["score"] is None and result["majority_score"] is None
    assert result["missing"] == ["mnli"]
    assert "mnli" not in result["tasks"] and result["tasks"]["rte"] == 1.0


def test_f1_without_any_positive_is_zero():
    assert advglue.f1_score([0, 0], [0, 0]) == 0.0


def test_unknown_split_and_length_mismatch_are_errors():
    with pytest.raises(ValueError):
        advglue.split_score("sst2", [1], [1])
    with pytest.raises(ValueError):
        advglue.split_score("advglue-rte", [1, 0], [1])


def test_majority_baseline_on_the_real_advglue_dev_set():
    # Label counts of dev.json: sst2 76/72, qqp 46 not-dup / 32 dup, qnli 74/74, rte 35/46,
    # mnli 32/39/50, mnli-mm 60/45/57. The majority predictor's official score is hand-computed from them.
    from robustft.data.tasks import load_examples

    results = {}
    for split in advglue.SPLITS:
        labels = [e.label for e in load_examples(split, "dev")]
        results[split] = (labels, labels)  # perfect predictions: every score is 1
    scored = advglue.official_score(results)
    assert scored["score"] == pytest.approx(1.0)
    assert scored["splits"]["advglue-sst2"]["majority"]["accuracy"] == pytest.approx(76 / 148)  # the 51.4%
    expected = (76 / 148 + (46 / 78 + 0.0) / 2 + 74 / 148 + 46 / 81 + (50 / 121 + 60 / 162) / 2) / 5
    assert scored["majority_score"] == pytest.approx(expected)  # 0.4536


def test_paired_score_difference_interval_and_verdict():
    sizes = {"advglue-sst2": 40, "advglue-qqp": 40, "advglue-qnli": 40, "advglue-rte": 40}
    sizes.update({"advglue-mnli": 30, "advglue-mnli-mm": 30})
    truth = {s: [i % (3 if "mnli" in s else 2) for i in range(n)] for s, n in sizes.items()}
    right = {s: (list(y), y) for s, y in truth.items()}
    same = advglue.paired_score_difference(right, right, n_boot=200)
    assert same["difference"] == 0.0 and same["ci95"] == [0.0, 0.0] and not same["detected"]
    # B wrong on every 4th example of each split: A's score is higher by exactly that much, clearly detected
    wrong = {
        s: ([(p + 1) % (3 if "mnli" in s else 2) if i % 4 == 0 else p for i, p in enumerate(y)], y)
        for s, y in truth.items()
    }
    diff = advglue.paired_score_difference(right, wrong, n_boot=200)
    assert diff["difference"] == pytest.approx(
        advglue.official_score(right)["score"] - advglue.official_score(wrong)["score"]
    )
    assert diff["detected"] and diff["ci95"][0] > 0
    with pytest.raises(ValueError, match="same splits"):
        advglue.paired_score_difference(right, {"advglue-sst2": right["advglue-sst2"]})
