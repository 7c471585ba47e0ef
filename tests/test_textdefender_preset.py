"""The `textdefender` preset (issue 55): ten defenses, each evaluated clean, attacked by the four TextDefender-protocol
recipes on one seeded test sample and, where a certificate exists, certified; and the bench's `certify` evaluations
that make the last possible. Nothing here trains or attacks: the jobs are only built."""

import json

from report_fixtures import write_fixture_runs
from robustft.bench.matrix import expand
from robustft.bench.presets import PRESETS, TEXTDEFENDER_N, bench_config
from robustft.config import BenchConfig, apply_overrides

METHODS = ["standard", "pgd", "freelbpp", "infobert", "ascc", "dne", "safer", "ranmask", "a2t", "rift"]
RECIPES = {"textfooler", "bert-attack", "textbugger", "pwws"}


def preset_jobs():
    return expand(bench_config("textdefender").validate())


def test_the_preset_trains_the_ten_defenses_once_each_on_the_rift_study_data():
    trains = [j for j in preset_jobs() if j.kind == "train"]
    assert [j.method for j in trains] == METHODS
    assert {(j.config.task, j.config.train_split, j.config.n_train, j.config.seed) for j in trains} == {
        ("sst2", "subset-train", 1000, 0)
    }
    assert {j.config.method for j in trains} == {
        "standard", "pgd", "freelbpp", "infobert", "ascc", "dne", "safer", "ranmask", "a2t", "rift-snli"
    }  # fmt: skip
    assert all(j.config.dev_split == "dev" and j.config.precision == "fp32" for j in trains)


def test_every_model_is_attacked_by_the_four_recipes_on_one_and_the_same_sample():
    attacks = [j for j in preset_jobs() if j.kind == "attack"]
    assert len(attacks) == len(METHODS) * len(RECIPES)
    for method in METHODS:
        assert {j.config.recipe for j in attacks if j.method == method} == RECIPES, method
    # the sample an attack draws is a function of these settings alone (attacks/run.py: load_examples + the
    # protocol's filter), so equal settings are the same examples for every recipe and model
    samples = {(j.config.task, j.config.split, j.config.n, j.config.seed, j.config.protocol) for j in attacks}
    assert samples == {("sst2", "test", TEXTDEFENDER_N, 0, "textdefender")}
    assert TEXTDEFENDER_N >= 200
    assert {j.config.mlm for j in attacks if j.config.recipe == "bert-attack"} == {"minilm"}


def test_clean_accuracy_everywhere_and_certified_accuracy_only_where_it_is_defined():
    evals = [j for j in preset_jobs() if j.kind == "eval"]
    for method in METHODS:
        plain = {(j.config.split, j.config.n) for j in evals if j.method == method and not j.config.certify}
        assert plain == {("dev", None), ("test", None)}, method
    certified = [j for j in evals if j.config.certify]
    assert sorted(j.method for j in certified) == ["ranmask", "safer"]
    assert {(j.config.split, j.config.n, j.config.seed) for j in certified} == {("test", TEXTDEFENDER_N, 0)}
    assert all(j.id.endswith(f"eval sst2/test/n{TEXTDEFENDER_N}/certify") for j in certified)
    assert all(j.folder.name == f"eval-sst2-test-n{TEXTDEFENDER_N}-certify" for j in certified)


def test_a_certify_evaluation_passes_its_settings_and_leaves_other_evaluations_as_they_were():
    values = {
        "name": "certify",
        "methods": {"bert": {}, "ranmask": {"method": "ranmask"}},
        "sizes": [32],
        "evals": [
            {"task": "{task}", "split": "dev"},
            {"task": "{task}", "split": "dev", "certify": True, "certify_samples": 50, "certify_alpha": 0.01},
        ],
    }
    jobs = [j for j in expand(apply_overrides(BenchConfig(), values).validate()) if j.kind == "eval"]
    assert [j.id for j in jobs] == [
        "bert/sst2/n32/s0 eval sst2/dev",  # the id a plain evaluation always had
        "ranmask/sst2/n32/s0 eval sst2/dev",
        "ranmask/sst2/n32/s0 eval sst2/dev/certify",  # beside the plain one, not instead of it
    ]
    plain, certified = jobs[1].config, jobs[2].config
    assert (plain.certify, certified.certify) == (False, True)
    assert (certified.certify_samples, certified.certify_alpha) == (50, 0.01)
    assert plain.output_dir != certified.output_dir


def test_the_preset_is_listed_with_the_others(capsys):
    from robustft.cli import main

    assert main(["methods"]) == 0
    presets = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("presets"))
    assert "textdefender" in presets.split(": ", 1)[1].split(", ")
    assert PRESETS["textdefender"]["seeds"] == [0]


def test_once_published_its_section_says_its_rows_carry_no_verdict(tmp_path):
    """Published like any preset, its RESULTS.md section names the study and why it has no verdicts; unpublished
    (no report.md) it is not on the page at all."""
    from robustft.report import build_report
    from robustft.runs import export_run
    from studies.results_page import render_results_page

    results = tmp_path / "results"
    (results / "textdefender").mkdir(parents=True)
    (results / "textdefender" / "published.json").write_text("{}")  # not published yet: no report.md
    runs = write_fixture_runs(tmp_path / "bench")
    assert "textdefender" not in render_results_page(results)

    preset = results / "textdefender"
    for folder in sorted(p for p in runs.iterdir() if p.is_dir()):
        export_run(folder, preset / "runs" / folder.name)
    build_report([preset / "runs"], preset, title="textdefender", plots=False, html=False)
    about = {"command": "robustft bench textdefender", "jobs": 72, "wall_minutes": None, "machine": "2 CPU cores"}
    (preset / "published.json").write_text(json.dumps(about | {"expected_minutes": 352, "git_commit": "abc1234"}))
    section = render_results_page(results).split("## `textdefender`: ", 1)[1]
    assert section.startswith("Ten defenses under the TextDefender protocol on 1,000 SST-2 examples, one seed")
    assert "One seed: its rows are a map of the defenses on one model each and carry no verdict." in section


def test_a_bench_certifies_a_ranmask_model_it_trained(tiny_model_dir, tmp_path):
    from robustft.bench.run import bench

    values = {
        "name": "certify",
        "model": tiny_model_dir,
        "methods": {"ranmask": {"method": "ranmask", "method_args": {"copies": 4}}},
        "baseline": "ranmask",
        "sizes": [16],
        "output_dir": str(tmp_path / "b"),
        "progress": False,
        "threads": 1,
        "precision": "fp32",
        "train": {"epochs": 1, "n_dev": 8, "max_length": 32, "batch_size": 8},
        "evals": [{"task": "{task}", "split": "dev", "n": 6, "certify": True, "certify_samples": 10}],
    }
    cfg = apply_overrides(BenchConfig(), values).validate()
    bench(cfg)
    (job,) = [j for j in expand(cfg) if j.kind == "eval"]
    certified = json.loads((job.folder / "metrics.json").read_text())["certified"]
    assert (certified["defense"], certified["samples"], certified["n"]) == ("ranmask", 10, 6)
