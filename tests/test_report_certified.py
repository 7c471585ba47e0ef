"""The report's certified accuracy: a bench trains tiny SAFER and RanMASK ensembles (the textdefender preset's way,
small), evaluates them plainly and with `certify: true`, and its report shows each certified accuracy as the eval
measured it, with n and its 95% interval, in report.json, report.md and report.html."""

import json
import re
from pathlib import Path

import pytest

from report_fixtures import train_config, write_eval, write_fixture_runs
from robustft.bench.run import bench
from robustft.config import BenchConfig, apply_overrides
from robustft.defenses.ranmask import RADII
from robustft.report import build_report

CERTIFY = {"task": "{task}", "split": "dev", "certify": True, "certify_samples": 10, "certify_alpha": 0.1}


@pytest.fixture(scope="module")
def certified_bench(tiny_model_dir, tmp_path_factory):
    """A finished bench: SAFER and RanMASK (4 copies), each evaluated on 6 dev examples plainly and with
    certificates, and certified alone on a sample of 4 that no plain eval covers; returns its folder."""
    values = {
        "name": "certified",
        "model": tiny_model_dir,
        "methods": {
            "safer": {"method": "safer", "method_args": {"copies": 4}},
            "ranmask": {"method": "ranmask", "method_args": {"copies": 4}},
        },
        "baseline": "safer",
        "sizes": [16],
        "output_dir": str(tmp_path_factory.mktemp("bench")),
        "progress": False,
        "threads": 1,
        "precision": "fp32",
        "train": {"epochs": 1, "n_dev": 8, "max_length": 32, "batch_size": 8},
        "evals": [{"task": "{task}", "split": "dev", "n": 6}, CERTIFY | {"n": 6}, CERTIFY | {"n": 4}],
    }
    return Path(bench(apply_overrides(BenchConfig(), values).validate())["report"]).parent


def certified_metrics(bench_folder):
    """{(method, sample n): metrics.json's `certified` and the eval's run name} of every certified eval."""
    found = {}
    for path in bench_folder.rglob("eval-*-certify/metrics.json"):
        method = json.loads((path.parent / "config.json").read_text())["model_run"]["config"]["method"]
        n = int(re.search(r"-n(\d+)-certify", path.parent.name).group(1))
        found[method, n] = json.loads(path.read_text())
    return found


def test_the_summary_carries_each_certified_accuracy_as_the_eval_measured_it(certified_bench):
    summary = json.loads((certified_bench / "report" / "report.json").read_text())
    metrics = certified_metrics(certified_bench)
    assert len(metrics) == 4 and len(summary["certified"]) == 4
    for row in summary["certified"]:
        measured = metrics[row["method"], row["n"]]["certified"]
        assert (row["defense"], row["samples"], row["alpha"], row["confidence"]) == (row["method"], 10, 0.1, 0.9)
        assert row["definition"] == measured["definition"] and row["copies"] == 4
        assert row["selection"]  # dev chose the models' epochs: the table labels it
        if row["defense"] == "safer":
            expected = {None: measured["accuracy"]}
        else:
            expected = {int(d): a for d, a in measured["accuracy_by_changed_words"].items()}
            assert sorted(expected) == list(RADII) and row["mean_radius"] == measured["mean_radius"]
        assert [f["changed_words"] for f in row["figures"]] == sorted(expected, key=lambda d: d or 0)  # d ascending
        for figure in row["figures"]:
            want = expected[figure["changed_words"]]
            assert figure["n"] == row["n"] == want["n"]
            assert (figure["accuracy"], figure["correct"], figure["ci95"]) == (
                want["accuracy"],
                want["correct"],
                want["ci95"],
            )
            low, high = figure["ci95"]
            assert 0 <= low <= figure["accuracy"] <= high <= 1
        vote = measured["vote_accuracy"]  # the clean accuracy of the classifier certified, on the same examples
        assert (row["vote_accuracy"]["correct"], row["vote_accuracy"]["ci95"]) == (vote["correct"], vote["ci95"])
        assert row["vote_accuracy"]["n"] == vote["n"] == row["n"]
        assert row["vote_accuracy_definition"] == measured["vote_accuracy_definition"]


def test_report_md_and_html_show_the_certified_table_with_n_and_interval(certified_bench):
    summary = json.loads((certified_bench / "report" / "report.json").read_text())
    markdown = (certified_bench / "report" / "report.md").read_text()
    section = markdown.split("## Certified accuracy\n", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("| ") and "---" not in line]
    header, rows = lines[0], [[c.strip() for c in line.strip("|").split("|")] for line in lines[1:]]
    assert "certified accuracy % [95% CI]" in header and "ensemble copies / samples / confidence" in header
    assert "clean accuracy of the certified (vote) classifier % [95% CI]" in header
    expected = [(row, figure) for row in summary["certified"] for figure in row["figures"]]
    assert len(rows) == len(expected) == 2 * (1 + len(RADII))  # two samples; SAFER one figure, RanMASK one per d
    for cells, (row, figure) in zip(rows, expected, strict=True):
        low, high = figure["ci95"]
        accuracy = f"{100 * figure['accuracy']:.1f} [{100 * low:.1f}, {100 * high:.1f}]"
        measured_on = f"SST-2 dev (selection), {row['n']} examples"
        d = figure["changed_words"]
        definition = "every word within its perturbation set" if d is None else f"{d} changed word{'s' * (d > 1)}"
        assert cells[:4] == [row["method"], measured_on, accuracy, str(row["n"])]
        vote = row["vote_accuracy"]
        low, high = vote["ci95"]
        assert cells[4:6] == [f"{100 * vote['accuracy']:.1f} [{100 * low:.1f}, {100 * high:.1f}]", str(vote["n"])]
        assert cells[6:] == [f"{row['defense']}: {definition}", "4 / 10 / 90%"]
    html = (certified_bench / "report" / "report.html").read_text()
    assert 'data-section="certified"' in html and "<h3>Certified accuracy</h3>" in html


def test_a_certified_eval_gives_way_to_the_plain_eval_of_the_same_examples(certified_bench):
    """Its predictions are the plain eval's: the plain one counts, and it is not listed as a left-out repeat; a
    certified eval alone on its sample stays the clean accuracy there."""
    summary = json.loads((certified_bench / "report" / "report.json").read_text())
    by_n = {ev["n"]: ev for ev in summary["evaluations"] if ev["kind"] == "clean" and ev["split"] == "dev"}
    shared, alone = by_n[6], by_n[4]
    assert shared["duplicates"] == [] and alone["duplicates"] == []
    assert {r["method"] for r in shared["rows"]} == {"ranmask", "safer"}
    assert all(not s["run"].endswith("-certify") for r in shared["rows"] for s in r["seeds"])
    assert all(s["run"].endswith("-n4-certify") for r in alone["rows"] for s in r["seeds"])


def test_a_report_without_certificates_has_no_certified_entry_or_table(tmp_path):
    summary = build_report([write_fixture_runs(tmp_path / "bench")], tmp_path / "report", plots=False)
    assert "certified" not in summary
    assert "Certified accuracy" not in (tmp_path / "report" / "report.md").read_text()
    assert 'data-section="certified"' not in (tmp_path / "report" / "report.html").read_text()


def _certify(folder: Path, certified: dict) -> None:
    """Give a hand-written eval run a `certified` entry, as `robustft eval --certify` writes it."""
    path = folder / "metrics.json"
    path.write_text(json.dumps(json.loads(path.read_text()) | {"certified": certified}))


def test_the_certified_table_shows_the_vote_classifiers_clean_accuracy_and_a_dash_for_older_runs(tmp_path):
    runs = write_fixture_runs(tmp_path / "bench")
    labels = [i % 2 for i in range(20)]
    setting = {"defense": "safer", "definition": "any swap", "samples": 10, "alpha": 0.1, "confidence": 0.9}
    for seed in (0, 1):  # the plain evals' examples and predictions: the plain runs count, these only certify
        folder = write_eval(runs, f"eval-std-s{seed}-certify", train_config(seed=seed), "sst2", "dev", labels, labels)
        certified = setting | {"n": 20, "accuracy": {"accuracy": 0.45, "n": 20, "correct": 9, "ci95": [0.26, 0.66]}}
        if seed == 0:  # seed 1 was certified before metrics.json recorded the vote classifier
            vote = {"accuracy": 0.85, "n": 20, "correct": 17, "ci95": [0.64, 0.95]}
            certified |= {"vote_accuracy": vote, "vote_accuracy_definition": "the majority vote's clean accuracy"}
        _certify(folder, certified)
    build_report([runs], tmp_path / "report", plots=False)
    markdown = (tmp_path / "report" / "report.md").read_text()
    section = markdown.split("## Certified accuracy\n", 1)[1].split("\n## ", 1)[0]
    assert "clean accuracy of the certified (vote) classifier % [95% CI]" in section
    rows = [line for line in section.splitlines() if line.startswith("| ") and "safer:" in line]
    assert len(rows) == 2
    # 17 of 20, Wilson at z = 1.96: centre (0.85 + z^2/40) / (1 + z^2/20) = 0.7936, half-width
    # z sqrt(0.85 * 0.15 / 20 + z^2 / 1600) / (1 + z^2/20) = 0.1540: [63.96, 94.76]%
    assert "| 45.0 [25.8, 65.8] | 20 | 85.0 [64.0, 94.8] | 20 | safer:" in rows[0]
    assert "| 45.0 [25.8, 65.8] | 20 | - | - | safer:" in rows[1]
