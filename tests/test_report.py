"""`robustft report` on hand-written run folders (tests/report_fixtures.py) whose numbers are known."""

import json
import re

import pytest

from report_fixtures import ADVGLUE_SIZES, train_config, write_eval, write_fixture_runs
from robustft.evaluation import advglue, stats
from robustft.report import build_report
from robustft.report.rendering.browser import find_browser


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    runs = write_fixture_runs(tmp_path_factory.mktemp("runs"))
    out = tmp_path_factory.mktemp("report")
    summary = build_report([runs], out)
    return runs, out, summary


def evaluation(summary, kind, task):
    return next(ev for ev in summary["evaluations"] if ev["kind"] == kind and ev["task"] == task)


def row(ev, method):
    return next(r for r in ev["rows"] if r["method"] == method)


def test_writes_every_output(built):
    _, out, summary = built
    for name in (
        "report.md",
        "report.json",
        "report.html",
        "accuracy_attack.png",
        "accuracy_advglue.png",
        "training_size.png",
        "probe.png",
    ):
        assert (out / name).is_file(), name
    assert json.loads((out / "report.json").read_text()) == json.loads(json.dumps(summary))


def test_methods_are_grouped_by_training_config_and_labelled(built):
    methods = built[2]["methods"]
    assert sorted(methods) == ["im+standard", "plain+rift", "plain+standard (n=100)", "plain+standard (n=1000)"]
    std = methods["plain+standard (n=1000)"]
    assert std["seeds"] == ["s0", "s1"]
    assert std["dev_accuracy"]["mean"] == pytest.approx(0.855)
    assert std["dev_accuracy"]["std"] == pytest.approx(stats.mean_std([0.85, 0.86])["std"])


def test_attack_accuracy_with_interval_and_seeds(built):
    ev = evaluation(built[2], "attack", "sst2")
    im = row(ev, "im+standard")
    assert [s["accuracy"] for s in im["seeds"]] == [30 / 40, 31 / 40]  # failed attacks / all
    assert im["seeds"][0]["ci95"] == stats.accuracy_from_counts(30, 40)["ci95"]
    assert im["seeds"][0]["n"] == 40
    assert im["accuracy"]["mean"] == pytest.approx(30.5 / 40)
    assert im["clean"]["mean"] == pytest.approx(36 / 40)  # 4 skipped of 40
    assert ev["majority"] == {"label": 0, "accuracy": 0.5, "n": 40}


def test_paired_comparison_against_the_baseline_of_the_same_size(built):
    ev = evaluation(built[2], "attack", "sst2")
    vs = row(ev, "im+standard")["vs_baseline"]
    assert vs["baseline"] == "plain+standard (n=1000)"
    first = vs["per_seed"][0]
    assert (first["a_only"], first["b_only"]) == (20, 0)  # IM keeps 30, the baseline 10 of the same ids
    assert first["p_value"] == pytest.approx(stats.mcnemar_exact(20, 0))
    assert vs["verdict"] == "im+standard > plain+standard (n=1000) (2/2 seeds)"
    rift = row(ev, "plain+rift")["vs_baseline"]
    assert (rift["per_seed"][0]["a_only"], rift["per_seed"][0]["b_only"]) == (2, 2)
    assert rift["verdict"] == stats.NO_DIFFERENCE
    assert "vs_baseline" not in row(ev, "plain+standard (n=100)")  # its own baseline was not attacked


def test_advglue_official_score_and_majority_from_the_examples(built):
    adv = built[2]["advglue"]
    assert set(adv) == {"im+standard", "plain+standard (n=1000)", "plain+rift"}
    expected = {}
    for split, size in ADVGLUE_SIZES.items():
        classes = 3 if "mnli" in split else 2
        labels = [i % classes for i in range(size)]
        expected[split] = ([(y + 1) % classes if i % 3 == 0 else y for i, y in enumerate(labels)], labels)
    official = advglue.official_score(expected)
    assert adv["im+standard"]["score"]["mean"] == pytest.approx(official["score"])
    assert adv["im+standard"]["majority_score"] == pytest.approx(official["majority_score"])
    one_task = adv["plain+rift"]  # AdvGLUE SST-2 only: no overall score, but its seed is counted
    assert one_task["score"]["mean"] is None and one_task["seeds_run"] == 1 and one_task["seeds"] == []
    ev = evaluation(built[2], "advglue", "advglue-sst2")
    assert ev["majority"]["accuracy"] == pytest.approx(0.5)  # 6 of 12 per label


def test_advglue_score_joins_the_five_task_models_of_one_method(tmp_path):
    """The advglue bench trains one model per task: their splits make one method's official score."""
    for arch in ("plain", "im"):
        for split, size in ADVGLUE_SIZES.items():
            cfg = {**train_config(arch=arch), "task": split.removeprefix("advglue-").removesuffix("-mm")}
            labels = [i % (3 if "mnli" in split else 2) for i in range(size)]
            write_eval(tmp_path / "runs", f"{arch}-{split}", cfg, split, "dev", labels, labels)
    summary = build_report([tmp_path / "runs"], tmp_path / "out")
    assert set(summary["advglue"]) == {"im+standard", "plain+standard"}  # not one entry per task model
    assert summary["advglue"]["im+standard"]["score"]["mean"] == pytest.approx(1.0)
    assert summary["advglue"]["im+standard"]["arch"] == "im" and not summary["advglue"]["im+standard"]["missing"]
    (paired,) = summary["advglue"]["im+standard"]["vs_baseline"]["per_seed"]  # both perfect: no difference
    assert summary["advglue"]["im+standard"]["vs_baseline"]["baseline"] == "plain+standard"
    assert paired["difference"] == 0.0 and not paired["detected"]


def test_training_size_pairs_points_of_one_family(built):
    (family,) = built[2]["training_size"]
    assert family["family"] == "plain+standard"
    assert [p["n_train"] for p in family["points"]] == [100, 1000]


def test_deviations_recorded_by_runs_and_shown_by_configs(built):
    texts = [d["text"] for d in built[2]["deviations"]]
    assert "TextFooler neighbours: 8 counter-fitted instead of 50 embedding neighbours" in texts
    assert any(t.startswith("backbone minilm") for t in texts)
    assert any("attacked 40 examples" in t for t in texts)


def test_anchors_sit_beside_our_figures(built):
    anchors = {(a["benchmark"], a["figure"]): a for a in built[2]["anchors"]}
    bert_large = anchors[("AdvGLUE", "official score, BERT-large (test)")]
    assert bert_large["published"] == 33.69
    assert any(s.startswith("im+standard:") for s in bert_large["ours"])
    gain = anchors[("AdvGLUE", "IM-BERT gain over BERT (points)")]["ours"]
    assert gain and gain[0].startswith("im+standard - plain+standard (n=1000): +")
    assert anchors[("RIFT", "SNLI clean accuracy")]["ours"] == []


def test_markdown_has_every_table_with_intervals_and_verdicts(built):
    md = (built[1] / "report.md").read_text()
    for heading in (
        "## Methods",
        "## AdvGLUE official score (dev)",
        "## textfooler on sst2 test",
        "## Published anchors",
        "## Deviations",
        "## Probe",
    ):
        assert heading in md
    assert "s0: 75.0 [" in md and "n=40" in md
    assert "im+standard > plain+standard (n=1000) (2/2 seeds)" in md
    assert "Majority-class baseline: 50.0%" in md


def test_overview_marks_only_differences_detected_in_every_seed(built):
    from robustft.report.rendering.tables import overview_table

    table = overview_table(built[2])
    column = next(i for i, c in enumerate(table.columns) if c.startswith("textfooler"))
    cells = {row[0]: row[column] for row in table.rows}
    assert cells["im+standard"] == "76.2 ± 1.8 ▲"
    assert cells["plain+rift"] == "25.0"  # 2 discordant pairs each way: no mark
    assert cells["majority class"] == "50.0"
    assert table.columns[:3] == ["method", "dev %", "AdvGLUE score %"]


def test_html_is_self_contained_escaped_and_highlights_swaps(built):
    page = (built[1] / "report.html").read_text()
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)  # loads nothing from anywhere
    assert page.count("data:image/png;base64,") == 5
    assert '<mark class="new">superb</mark>' in page
    assert "<b>" not in page.split("<main>")[1]  # words from the runs are escaped ("<b>" is in the fixture texts)
    assert '<select id="filter-outcome">' in page and '<option value="succeeded">' in page


def test_runs_without_examples_give_intervals_but_no_paired_test(tmp_path):
    from report_fixtures import train_config

    labels = [1, 0] * 10
    write_eval(tmp_path / "runs", "a", train_config(), "sst2", "dev", labels, labels)
    write_eval(tmp_path / "runs", "b", train_config(arch="im"), "sst2", "dev", labels, [1] * 20)
    (tmp_path / "runs" / "b" / "examples.jsonl").unlink()
    summary = build_report([tmp_path / "runs"], tmp_path / "out", plots=False, html=False)
    im = summary["evaluations"][0]["rows"][0]
    assert im["method"] == "im+standard"
    assert im["seeds"][0]["accuracy"] == 0.5 and im["seeds"][0]["ci95"] == stats.accuracy_from_counts(10, 20)["ci95"]
    assert im["vs_baseline"]["verdict"].startswith("not paired")


def test_a_half_written_last_line_is_ignored(tmp_path):
    from report_fixtures import train_config

    folder = write_eval(tmp_path / "runs", "a", train_config(), "sst2", "dev", [1, 0], [1, 1])
    with open(folder / "examples.jsonl", "a") as f:
        f.write('{"index": 2, "id": "x", "lab')
    summary = build_report([tmp_path / "runs"], tmp_path / "out", plots=False, html=False)
    assert summary["evaluations"][0]["rows"][0]["seeds"][0]["n"] == 2


def test_a_run_still_going_is_left_out_with_a_warning_naming_it(tmp_path, caplog):
    import json

    from report_fixtures import train_config

    labels = [1, 0] * 10
    write_eval(tmp_path / "runs", "done", train_config(), "sst2", "dev", labels, labels)
    going = write_eval(tmp_path / "runs", "going", train_config(arch="im"), "sst2", "dev", labels, [1] * 20)
    metrics = json.loads((going / "metrics.json").read_text())
    (going / "metrics.json").write_text(json.dumps({**metrics, "complete": False}))  # as a killed run leaves it
    summary = build_report([tmp_path / "runs"], tmp_path / "out", plots=False, html=False)
    assert [r["name"] for r in summary["runs"]] == ["done"]
    assert "left out 1 unfinished run folder(s): going" in caplog.text


def test_report_is_the_same_when_built_twice(built, tmp_path):
    runs, out, _ = built
    build_report([runs], tmp_path, plots=False, html=False)
    assert (tmp_path / "report.json").read_bytes() == (out / "report.json").read_bytes()
    from robustft.publish.recheck import without_plots  # the plot list is all that differs without plots

    assert without_plots((tmp_path / "report.md").read_text()) == without_plots((out / "report.md").read_text())


def test_unknown_baseline_and_empty_folder_are_user_errors(built, tmp_path):
    from robustft.errors import ConfigError, MissingResource

    with pytest.raises(ConfigError):
        build_report([built[0]], tmp_path, baseline="nope", plots=False)
    with pytest.raises(MissingResource):
        build_report([tmp_path], tmp_path / "out")


def test_a_bench_whose_baseline_has_not_finished_yet_is_reported_without_pairs(built, tmp_path):
    # a bench part-way (e.g. its RIFT cells put off by a deadline) still publishes what finished
    summary = build_report([built[0]], tmp_path, baseline="rift", bench_baseline=True, plots=False, html=False)
    assert summary["baseline"].startswith("rift (no run of it has finished yet")
    assert summary["evaluations"] and not any("vs_baseline" in r for ev in summary["evaluations"] for r in ev["rows"])
    assert "no run of it has finished yet" in (tmp_path / "report.md").read_text(encoding="utf-8")


def test_command_line_parses_and_writes(built, tmp_path, capsys):
    from robustft.cli import main

    argv = ["report", str(built[0]), "--output_dir", str(tmp_path), "--baseline", "plain+rift", "--plots", "false"]
    assert main([*argv, "--examples_per_run", "3"]) == 0
    summary = json.loads((tmp_path / "report.json").read_text())
    ev = next(ev for ev in summary["evaluations"] if ev["kind"] == "attack")
    assert next(r for r in ev["rows"] if r["method"] == "im+standard")["vs_baseline"]["baseline"] == "plain+rift"
    printed = capsys.readouterr().out
    assert "## Overview" in printed and "report.html" in printed
    assert (tmp_path / "report.html").read_text().count("<tr data-method=") == 3 * 7  # 7 attack runs
    assert not list(tmp_path.glob("*.png"))


def test_the_old_report_flags_still_work(built, tmp_path, capsys):
    from robustft.cli import main

    argv = ["report", str(built[0]), "--out", str(tmp_path), "--no-plots", "--examples-per-run", "2"]
    assert main(argv) == 0
    assert "--output_dir" in capsys.readouterr().err  # with a warning naming the new spelling
    assert (tmp_path / "report.html").read_text().count("<tr data-method=") == 2 * 7
    assert not list(tmp_path.glob("*.png"))


def test_report_settings_come_from_a_config_file_and_the_command_line(built, tmp_path, capsys):
    from robustft.cli import main

    config = tmp_path / "report.yaml"
    config.write_text(json.dumps({"runs": [str(built[0])], "title": "from a file", "plots": False, "html": True}))
    out = tmp_path / "out"
    assert main(["report", "--config", str(config), "--output_dir", str(out), "--html", "false"]) == 0
    assert (out / "report.md").read_text().startswith("# from a file\n") and not (out / "report.html").exists()
    assert "report.html" not in capsys.readouterr().out  # it names only what it wrote


def test_report_is_a_plain_function_of_its_config(built, tmp_path):
    from robustft.config import ReportConfig, build_config
    from robustft.errors import ConfigError
    from robustft.report import report

    cfg = build_config(ReportConfig, [], [f"output_dir={tmp_path}", "plots=false", "html=false"])
    cfg.runs = [str(built[0])]
    assert json.loads(json.dumps(report(cfg))) == json.loads((tmp_path / "report.json").read_text())
    with pytest.raises(ConfigError, match="runs: name at least one run folder"):
        report(build_config(ReportConfig))
    with pytest.raises(ConfigError, match="examples_per_run"):
        build_config(ReportConfig, [], ["examples_per_run=-1"])


def test_a_report_without_run_folders_is_a_one_line_error(capsys):
    from robustft.cli import main

    assert main(["report", "--title", "x"]) == 2
    assert "runs: name at least one run folder" in capsys.readouterr().err


@pytest.mark.skipif(find_browser() is None, reason="chromium is not installed (apt-get install -y chromium)")
def test_page_loads_in_headless_chromium_without_errors(built, tmp_path):
    from robustft.report.rendering.browser import check_page

    page = built[1] / "report.html"
    result = check_page(page, screenshot=tmp_path / "shot.png")
    assert result.errors == []
    assert result.screenshot is not None and result.screenshot.stat().st_size > 10_000
    # the filter runs in the browser: IM's successful attacks are 40 - 30 - 4 (seed 0) + 40 - 31 - 4 (seed 1)
    filtered = check_page(page, fragment="method=im%2Bstandard&outcome=succeeded")
    assert filtered.errors == [] and filtered.attributes["shown"] == "11"


@pytest.mark.skipif(find_browser() is None, reason="chromium is not installed (apt-get install -y chromium)")
def test_headless_check_catches_a_script_error(tmp_path):
    from robustft.report.rendering.browser import check_page

    page = tmp_path / "broken.html"
    page.write_text('<html><body data-ready="1"><script>undefinedFunction();</script></body></html>')
    errors = check_page(page).errors
    assert any("Uncaught ReferenceError" in e for e in errors)


def test_cells_inside_a_bench_run_folder_are_found_and_repeats_counted_once(tmp_path):
    import shutil

    from report_fixtures import _write, train_config

    bench = _write(tmp_path / "bench", {"verb": "bench", "config": {"preset": "quick"}}, {})
    labels = [1, 0] * 5
    write_eval(bench / "cells", "a", train_config(), "sst2", "dev", labels, labels)
    shutil.copytree(bench / "cells" / "a", bench / "cells" / "b")  # the same measurement again
    summary = build_report([bench], tmp_path / "out", plots=False, html=False)
    (ev,) = summary["evaluations"]
    assert len(ev["rows"]) == 1 and len(ev["rows"][0]["seeds"]) == 1
    assert ev["duplicates"] == ["bench/cells/b"]
    assert [r["verb"] for r in summary["runs"]] == ["bench", "eval", "eval"]


def test_seeds_that_disagree_give_a_mixed_verdict_and_no_mark(tmp_path):
    from report_fixtures import attack_results, train_config, write_attack
    from robustft.report.rendering.tables import overview_table

    runs = tmp_path / "runs"
    for seed, (base_kept, im_kept) in enumerate([(10, 30), (30, 10)]):  # IM far above, then far below
        write_attack(runs, f"std-s{seed}", train_config(seed=seed), attack_results(base_kept))
        write_attack(runs, f"im-s{seed}", train_config(arch="im", seed=seed), attack_results(im_kept))
    summary = build_report([runs], tmp_path / "out", plots=False, html=False)
    vs = summary["evaluations"][0]["rows"][0]["vs_baseline"]
    assert vs["verdict"] == "mixed: im+standard > plain+standard in 1/2, plain+standard > im+standard in 1/2"
    assert not vs["detected"]
    assert overview_table(summary).rows[0][2] == "50.0 ± 35.4"  # 75 and 25: no mark


def test_attack_examples_that_ended_in_an_error_are_named_below_their_table(tmp_path):
    from report_fixtures import attack_results, train_config, write_attack

    write_attack(tmp_path / "runs", "std", train_config(), attack_results(10) + ["error"] * 3)
    build_report([tmp_path / "runs"], tmp_path / "out", plots=False, html=False)
    text = (tmp_path / "out" / "report.md").read_text()
    assert "n=40" in text and "Left out of n: examples whose attack ended in an error, in std (3)." in text


def test_the_claims_answer_each_paper_with_its_sign_size_and_what_it_would_take():
    from robustft.report.claims.paper_claims import claim_rows

    plain = {"arch": "plain", "size": "all", "n_train": None, "task": "sst2", "dev_split": "subset-dev"}

    def pooled(d, low, high, n=1000):
        return {"difference": d, "ci95": [low, high], "n_seeds": 3, "n": n}

    summary = {
        "methods": {
            "rift": {**plain, "method": "rift-snli"},
            "pgd": {**plain, "method": "pgd"},
            "ascc": {**plain, "method": "ascc"},
            "bert": {**plain, "method": "standard"},
            "im": {**plain, "arch": "im", "method": "standard", "size": "16/class", "n_train": 32},
            "im-full": {**plain, "arch": "im", "method": "standard"},
        },
        "advglue": {},
        "evaluations": [
            {
                "kind": "attack",
                "recipe": "pwws",
                "title": "pwws on snli test",
                "rows": [
                    {
                        "method": "pgd",
                        "seeds": [{"seed": 0, "clean": {"accuracy": 0.80}}],
                        "vs_baseline": {
                            "baseline": "rift",
                            "per_seed": [{"seed": 0}],
                            "pooled": pooled(-0.05, -0.08, -0.02),
                            "both_right_before": {"pooled": pooled(-0.01, -0.04, 0.02, 700)},
                        },
                    },
                    # RIFT's second seed is not in the comparison, so not in the clean accuracy beside it
                    {
                        "method": "rift",
                        "seeds": [{"seed": 0, "clean": {"accuracy": 0.79}}, {"seed": 1, "clean": {"accuracy": 0.70}}],
                    },
                    {
                        "method": "bert",
                        "vs_baseline": {
                            "baseline": "rift",
                            "per_seed": [{"seed": 0}],
                            "pooled": pooled(-0.2, -0.3, -0.1),
                        },
                    },
                    {
                        "method": "ascc",  # a baseline ahead of RIFT by an unresolved 1.7 points
                        "vs_baseline": {
                            "baseline": "rift",
                            "per_seed": [{"seed": 0}],
                            "pooled": pooled(0.017, 0.0, 0.034),
                        },
                    },
                ],
            },
            {
                "kind": "advglue",
                "task": "advglue-sst2",
                "split": "dev",
                "recipe": None,
                "title": "advglue-sst2 dev",
                "rows": [
                    {"method": "im", "vs_baseline": {"baseline": "bert", "pooled": pooled(0.07, 0.03, 0.11, 148)}},
                    {"method": "im-full", "vs_baseline": {"baseline": "bert", "pooled": pooled(0.03, -0.05, 0.1, 148)}},
                ],
            },
            {
                "kind": "clean",
                "task": "sst2",
                "split": "subset-dev",  # chose the models' epochs: answers no claim
                "recipe": None,
                "title": "sst2 subset-dev",
                "rows": [{"method": "im", "vs_baseline": {"baseline": "bert", "pooled": pooled(0.1, 0.08, 0.12, 692)}}],
            },
            {
                "kind": "clean",
                "task": "sst2",
                "split": "dev",
                "recipe": None,
                "title": "sst2 dev",
                "rows": [
                    {"method": "im", "vs_baseline": {"baseline": "bert", "pooled": pooled(0.0, -0.02, 0.02, 872)}}
                ],
            },
        ],
    }
    rift, ascc, low_adv, adv, low = claim_rows(summary)  # standard fine-tuning is no adversarial baseline: no row
    assert ascc["compared"] == "rift - ascc" and ascc["verdict"].startswith("inconclusive: telling -1.7 points from 0")
    assert str(ascc["ci95"][1]) == "0.0"  # an interval ending at 0 does not print as -0.0
    assert rift["compared"] == "rift - pgd" and rift["difference"] == 0.05 and rift["ci95"] == [0.02, 0.08]
    assert rift["verdict"] == "reproduced" and "pgd clean 80.0%, rift clean 79.0%" in rift["measured_on"]
    assert "on the 700 examples both got right before the attack: +1.0 [-2.0, +4.0]" in rift["measured_on"]
    one_task = "indicative only (one task): inconclusive: telling +8.3 points from 0 would take about 121 paired"
    assert adv["verdict"].startswith(one_task)
    assert "the paper's figure is the five-task score" in adv["measured_on"]
    assert low["verdict"] == "not reproduced: the interval rules out the paper's +5.9"
    assert low_adv["claim"] == low["claim"] and low_adv["verdict"] == "reproduced"  # AdvGLUE after 16 per class
    assert adv["claim"].endswith("on AdvGLUE") and "16/class" in low_adv["measured_on"]


def test_attacks_are_also_compared_on_the_examples_both_models_got_right_before(tmp_path):
    from report_fixtures import attack_results, train_config, write_attack
    from robustft.report.rendering.tables import evaluation_table

    runs = tmp_path / "runs"
    # the baseline is wrong on 20 of 40 before the attack (skipped); IM on 4. Both keep exactly ids 0-9 of the 20
    # examples both got right, so IM's lead under attack (20 kept against 10) is only its clean accuracy.
    write_attack(runs, "std", train_config(), attack_results(10, skipped=20))
    write_attack(runs, "im", train_config(arch="im"), attack_results(20, skipped=4))
    summary = build_report([runs], tmp_path / "out", plots=False, html=False)
    vs = row(summary["evaluations"][0], "im+standard")["vs_baseline"]
    assert vs["per_seed"][0]["difference"] == pytest.approx(10 / 40)
    both = vs["both_right_before"]
    assert (both["per_seed"][0]["n"], both["per_seed"][0]["difference"]) == (20, 0.0)
    assert both["verdict"] == stats.NO_DIFFERENCE and both["pooled"]["n"] == 20
    table = evaluation_table(summary["evaluations"][0])
    assert table.columns[-1] == "the same on the examples both got right before the attack"
    assert table.rows[0][-1].startswith("+0.0 [0.0, 0.0] vs plain+standard") and "n=20" in table.rows[0][-1]
