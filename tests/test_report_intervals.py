"""One interval per number (issue 67 trap 5): the overview and the per-run tables print the same interval for one
figure, a run's accuracy carries Wilson's interval (which keeps a width at 0 of n), and a difference with no spread
is never printed as a point. Oracles: Wilson's and the paired t's closed forms, computed here by hand."""

import math
from pathlib import Path
from types import SimpleNamespace

import pytest
from scipy.stats import t as student_t

from report_fixtures import train_config, write_eval
from robustft.evaluation import intervals
from robustft.report import build_report
from robustft.report.certified import _figures
from robustft.report.claims.common import registered_table
from robustft.report.rendering.tables import evaluation_table, interval, overview_table
from robustft.report.summary import standing

Z = 1.959963984540054


def wilson(k: int, n: int) -> tuple[float, float]:
    p, denom = k / n, 1 + Z * Z / n
    centre = (p + Z * Z / (2 * n)) / denom
    half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def _row(table, method: str) -> list[str]:
    return next(r for r in table.rows if method in r[:2])


def _one_seed(tmp_path: Path, plain: list[int], im: list[int]):
    """Two methods, one seed, scored on the same dev examples (labels all 1; a 1 in the list: right)."""
    runs = tmp_path / "runs"
    labels = [1] * len(plain)
    write_eval(runs, "eval-std", train_config(), "sst2", "dev", labels, plain)
    write_eval(runs, "eval-im", train_config(arch="im"), "sst2", "dev", labels, im)
    return build_report([runs], tmp_path / "out", plots=False, html=False)


def test_a_run_right_on_none_of_ten_prints_wilsons_interval_not_a_point(tmp_path):
    summary = _one_seed(tmp_path, [0] * 10, [1] * 10)
    high = wilson(0, 10)[1]  # 0.2775: by hand, (z^2/20 + z sqrt(z^2/400)) / (1 + z^2/10)
    expected = f"[0.0, {100 * high:.1f}]"
    assert expected == "[0.0, 27.8]"
    overview = _row(overview_table(summary), "plain+standard")
    assert overview[2] == f"0.0 {expected}"
    per_run = _row(evaluation_table(summary["evaluations"][0]), "plain+standard")
    assert per_run[3] == f"s0: 0.0 {expected} n=10"
    assert _row(overview_table(summary), "im+standard")[2] == f"100.0 [{100 * wilson(10, 10)[0]:.1f}, 100.0]"


def test_the_overview_and_the_per_run_table_print_one_interval_for_one_number(tmp_path):
    # 20 examples: both right on 8, im only on 6, plain only on 2, neither on 4
    plain = [1] * 8 + [0] * 6 + [1] * 2 + [0] * 4
    im = [1] * 8 + [1] * 6 + [0] * 2 + [0] * 4
    summary = _one_seed(tmp_path, plain, im)
    d = [a - b for a, b in zip(im, plain, strict=True)]
    mean = sum(d) / 20
    sd = math.sqrt(sum((x - mean) ** 2 for x in d) / 19)
    half = student_t.ppf(0.975, 19) * sd / math.sqrt(20)
    expected = f"{100 * mean:+.1f} [{100 * (mean - half):+.1f}, {100 * (mean + half):+.1f}]"
    overview = _row(overview_table(summary), "im+standard")
    per_run = _row(evaluation_table(summary["evaluations"][0]), "im+standard")
    assert overview[4] == f"{expected} vs plain+standard"
    assert per_run[-1].startswith(f"{expected} vs plain+standard, McNemar p=")
    # and the accuracy: 14 of 20 with Wilson's interval in both tables
    low, high = wilson(14, 20)
    assert overview[2] == f"70.0 [{100 * low:.1f}, {100 * high:.1f}]"
    assert per_run[3] == f"s0: 70.0 [{100 * low:.1f}, {100 * high:.1f}] n=20"


def test_every_table_names_the_interval_it_prints(tmp_path):
    summary = _one_seed(tmp_path, [1, 0] * 10, [1, 1] * 10)
    for table in (overview_table(summary), evaluation_table(summary["evaluations"][0])):
        text = " ".join(table.notes)
        assert "Wilson" in text and "paired t-interval" in text


def test_a_certified_accuracy_of_none_of_ten_keeps_wilsons_width():
    """Certified accuracy 0 of 10 printed [0.0000, 0.0000] (the bootstrap); Wilson's [0, 0.28] was computed and
    hidden."""
    figure = _figures(SimpleNamespace(path=Path(".")), {"accuracy": {"correct": 0, "n": 10}})[0]
    assert figure["ci95"] == pytest.approx([0.0, wilson(0, 10)[1]])
    assert interval(figure["ci95"]) == "[0.0, 27.8]"
    assert "wilson95" not in figure  # one interval per number


def test_an_interval_over_seeds_with_no_spread_is_wilsons_not_a_point():
    none_right = intervals.accuracy_over_seeds([[0.0] * 30] * 3)
    assert none_right["ci95"] == pytest.approx([0.0, wilson(0, 30)[1]])
    same = intervals.paired_difference_over_seeds([[0.0] * 30] * 3)
    assert same["ci95"] == pytest.approx([-wilson(0, 30)[1], wilson(0, 30)[1]])
    one = intervals.accuracy_over_seeds([[1.0] * 12 + [0.0] * 8])
    assert one["ci95"] == pytest.approx(list(wilson(12, 20)))


def test_a_registered_comparison_is_paired_over_seeds_and_listed(tmp_path):
    runs = tmp_path / "runs"
    labels = [1] * 20
    rows = {  # (method, seed): right answers; rift is right on 4 more than im+standard at seed 0, 2 more at seed 1
        ("im", 0): [1] * 10 + [0] * 10,
        ("rift", 0): [1] * 14 + [0] * 6,
        ("im", 1): [1] * 11 + [0] * 9,
        ("rift", 1): [1] * 13 + [0] * 7,
    }
    for (name, seed), predictions in rows.items():
        arch, method = ("im", "standard") if name == "im" else ("plain", "rift")
        cfg = train_config(method=method, arch=arch, seed=seed)
        write_eval(runs, f"eval-{name}-s{seed}", cfg, "sst2", "dev", labels, predictions)
    write_eval(runs, "eval-std-s0", train_config(), "sst2", "dev", labels, [1] * 12 + [0] * 8)
    study = standing(comparisons=[("plain+rift", "im+standard")])
    summary = build_report([runs], tmp_path / "out", plots=False, html=False, study=study)
    registered = summary["evaluations"][0]["registered"]
    assert [(r["a"], r["b"]) for r in registered] == [("plain+rift", "im+standard")]
    pooled = registered[0]["pooled"]
    assert pooled["difference"] == pytest.approx((4 / 20 + 2 / 20) / 2) and pooled["n_seeds"] == 2
    table = registered_table(summary)
    assert table.rows[0][0] == "plain+rift - im+standard" and table.rows[0][3] == "2 x 20"
    # beside it, both methods' accuracy and their baseline's (14+13 and 10+11 of 40; 12 of 20): who moved
    beside = "plain+rift 67.5%, im+standard 52.5%, plain+standard (baseline) 60.0%"
    assert table.rows[0][1] == f"SST-2 dev (selection) ({beside})"
    assert "registered" not in build_report([runs], tmp_path / "plain", plots=False, html=False)["evaluations"][0]


def test_an_advglue_row_names_the_majority_class_and_who_falls_below_it():
    from robustft.report.claims.common import majority_words

    both = {"accuracy": 0.514, "methods": {"im": 0.359, "bert": 0.417}}
    assert majority_words(both) == "majority class 51.4%; im 35.9, bert 41.7 (both below it)"
    one = {"accuracy": 0.514, "methods": {"im": 0.359, "bert": 0.6}}
    assert majority_words(one).endswith("(im below it)")
