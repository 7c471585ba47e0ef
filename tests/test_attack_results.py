import csv

import pytest

from robustft.attacks.results import AttackRecord, summarize, write_csv


def rec(i, result, words=10, swaps=0, queries=0, distinct=0):
    return AttackRecord(
        index=i,
        id=str(i),
        label=0,
        result=result,
        original="x",
        adversarial="y",
        swaps=[{"index": k, "original": "a", "new": "b"} for k in range(swaps)],
        num_words=words,
        queries=queries,
        distinct_queries=distinct,
    )


def test_textattack_metric_definitions():
    records = [
        rec(0, "succeeded", 10, 2, 30, 20),
        rec(1, "succeeded", 20, 2, 50, 45),
        rec(2, "failed", 10, 1, 40, 40),
        rec(3, "skipped", 10, 0, 1, 1),
        rec(4, "error"),
    ]
    s = summarize(records)
    assert s["num_examples"] == 4 and s["num_errors"] == 1
    assert s["original_accuracy"] == pytest.approx(75.0)  # 3 of 4 were right
    assert s["accuracy_under_attack"] == pytest.approx(25.0)  # 1 of 4 still right
    assert s["attack_success_rate"] == pytest.approx(100 * 2 / 3)  # skipped left out
    assert s["avg_perturbed_word_pct"] == pytest.approx((20 + 10) / 2)  # successes only
    assert s["avg_num_queries"] == pytest.approx(40.0)  # attacked examples only, TextAttack's unit
    assert s["avg_num_distinct_queries"] == pytest.approx(35.0)
    assert s["avg_num_words"] == pytest.approx(12.5)


def test_empty_summary_is_undefined_not_a_crash():
    s = summarize([])
    assert s["num_examples"] == 0 and s["attack_success_rate"] is None


def test_json_roundtrip_and_csv(tmp_path):
    r = rec(0, "succeeded", 5, 1, 7, 6)
    assert AttackRecord.from_json(r.to_json()) == r
    write_csv([r], tmp_path / "x.csv")
    rows = list(csv.DictReader(open(tmp_path / "x.csv", encoding="utf-8")))
    assert rows[0]["result"] == "succeeded" and rows[0]["swaps"] == "0:a->b" and rows[0]["queries"] == "7"
    assert rows[0]["distinct_queries"] == "6"
