"""Committed results (docs/results/<preset>/) re-checked against the code, as RobustBench re-checks its
model cards: every metrics.json is what the code computes from the run's examples, and report.json and
report.md are what `robustft report` regenerates from the committed runs."""

import json
from pathlib import Path

import pytest

from report_fixtures import write_fixture_runs
from robustft.publish.recheck import recheck
from robustft.report import build_report
from robustft.runs import export_run

RESULTS = Path(__file__).resolve().parents[1] / "docs" / "results"
PRESETS = sorted(p for p in RESULTS.glob("*") if (p / "runs").is_dir()) if RESULTS.is_dir() else []


@pytest.mark.parametrize("preset", PRESETS, ids=[p.name for p in PRESETS])
def test_committed_results_are_what_the_code_computes(preset):
    assert recheck(preset) == []


@pytest.fixture
def exported(tmp_path):
    """A results folder made the documented way: export every run, then report on the exported runs."""
    runs = write_fixture_runs(tmp_path / "bench")
    preset = tmp_path / "results" / "quick"
    for folder in sorted(p for p in runs.iterdir() if p.is_dir()):
        export_run(folder, preset / "runs" / folder.name)
    build_report([preset / "runs"], preset, title="quick preset", plots=False, html=False)
    return preset


def test_an_exported_preset_rechecks_clean(exported):
    assert (exported / "runs" / "attack-im-s0" / "examples.jsonl.gz").is_file()
    assert not (exported / "runs" / "attack-im-s0" / "examples.jsonl").exists()
    assert recheck(exported) == []


def test_a_metrics_file_edited_by_hand_is_caught(exported):
    path = exported / "runs" / "attack-im-s0" / "metrics.json"
    metrics = json.loads(path.read_text())
    metrics["accuracy_under_attack"] += 5.0
    path.write_text(json.dumps(metrics))
    assert any("attack-im-s0/accuracy_under_attack" in p for p in recheck(exported))


def test_a_stale_report_is_caught(exported):
    path = exported / "report.json"
    report = json.loads(path.read_text())
    report["evaluations"][0]["rows"][0]["accuracy"]["mean"] = 0.99
    path.write_text(json.dumps(report))
    problems = recheck(exported)
    assert any(p.startswith("report.json/evaluations") for p in problems)


def test_a_stale_markdown_is_caught(exported):
    path = exported / "report.md"
    path.write_text(path.read_text().replace("| im+standard |", "| im+standard (better) |", 1))
    assert "report.md differs from the Markdown regenerated from the runs" in recheck(exported)


def test_an_eval_line_whose_correct_flag_lies_is_caught(exported):
    import gzip

    path = exported / "runs" / "eval-im-s0" / "examples.jsonl.gz"
    lines = [json.loads(line) for line in gzip.open(path, "rt")]
    lines[5]["correct"] = not lines[5]["correct"]
    with gzip.open(path, "wt") as f:
        f.writelines(json.dumps(line) + "\n" for line in lines)
    assert any("'correct' disagrees" in p for p in recheck(exported))


def test_the_results_page_is_generated_from_the_committed_reports():
    from robustft.publish.results_page import render_results_page

    page = RESULTS.parent / "RESULTS.md"
    if not any(RESULTS.glob("*/report.md")):
        pytest.skip("no preset published yet (robustft.publish.bench_results)")
    assert page.read_text(encoding="utf-8") == render_results_page(RESULTS)


def test_the_published_compute_time_sums_each_jobs_own_time_over_its_sessions(tmp_path):
    from robustft.bench.calibrate import measured_seconds

    runs = write_fixture_runs(tmp_path / "bench")
    assert measured_seconds(runs / "train-std-s1") == 61.0  # the loop's time, accumulated across resumes
    attack = runs / "attack-im-s0"
    lines = (attack / "examples.jsonl").read_text().splitlines()
    assert measured_seconds(attack) == pytest.approx(0.1 * len(lines))  # per-example seconds, summed
    assert measured_seconds(runs / "eval-im-s0") == 0.0


def test_the_published_machine_names_every_machine_its_jobs_ran_on():
    """Runs from a CPU with native bf16 and one without give other weights and times: the results page must say
    which machine ran how many jobs, and which jobs did not record it."""
    from robustft.publish.bench_results import machines

    epyc = {"cpu": "AMD EPYC", "arch": "x86_64", "cores": 2, "native_bf16": False, "gpu": None}
    xeon = {**epyc, "cpu": "Intel Xeon Platinum 8480+", "native_bf16": True}
    described = [
        {"robustft_run": 1, "verb": "eval", **({"machine": machine} if machine else {})}
        for machine in [epyc, epyc, xeon, None]
    ]
    assert machines([]) == "no machine yet (no job finished)"
    assert machines(described[:2]) == "AMD EPYC (x86_64), 2 CPU cores, no native bf16, no GPU"
    assert machines(described) == (
        "AMD EPYC (x86_64), 2 CPU cores, no native bf16, no GPU (2 jobs); "
        "Intel Xeon Platinum 8480+ (x86_64), 2 CPU cores, native bf16, no GPU (1 job); "
        "machines not recorded (jobs run before run folders recorded theirs, 2026-12-02) (1 job)"
    )


def test_a_preset_whose_jobs_ran_on_several_commits_says_so():
    from robustft.publish.results_page import how_it_ran

    about = {"command": "robustft bench quick", "jobs": 3, "wall_minutes": None, "machine": "2 CPU cores"}
    about |= {"expected_minutes": 1.0, "git_commit": "abc1234"}
    assert "code abc1234." in how_it_ran("quick", about, has_runs=True)
    several = how_it_ran("quick", {**about, "job_commits": 3}, has_runs=True)
    assert "code abc1234 (its last call; its finished jobs ran on 3 commits" in several


def test_the_results_page_opens_with_every_presets_answers_to_the_claims(exported):
    from robustft.publish.results_page import render_results_page

    about = {"command": "robustft bench quick", "jobs": 10, "finished": 4, "wall_minutes": None}
    about |= {"machine": "2 CPU cores", "expected_minutes": 1.0, "git_commit": "abc1234"}
    (exported / "published.json").write_text(json.dumps(about))
    claims = json.loads((exported / "report.json").read_text())["claims"]
    page = render_results_page(exported.parent)
    head, _, rest = page.partition("\n## Preset `quick`")
    assert rest and "## The papers' claims, every preset" in head
    rows = [line for line in head.splitlines() if line.startswith("| `quick` (still running, 4 of 10 jobs) |")]
    assert len(rows) == len(claims) > 0
    assert all(c["verdict"] in page for c in claims)


def test_a_preset_that_reports_with_another_does_not_repeat_its_claims(exported):
    """im-lowresource-1000's report also reads the 16-shot runs: before its own jobs finish, its claims are the
    16-shot ones, which the page must list once, under the preset that ran them."""
    from robustft.publish.results_page import render_results_page

    about = {"command": "robustft bench quick", "jobs": 10, "wall_minutes": None, "machine": "2 CPU cores"}
    about |= {"expected_minutes": 1.0, "git_commit": "abc1234"}
    (exported / "published.json").write_text(json.dumps(about))
    borrower = exported.parent / "bigger"
    (borrower / "runs").mkdir(parents=True)  # none of its own jobs finished yet
    build_report([borrower / "runs", exported / "runs"], borrower, title="bigger", plots=False, html=False)
    (borrower / "published.json").write_text(json.dumps({**about, "report_with": ["quick"]}))
    head = render_results_page(exported.parent).partition("\n## Preset ")[0]
    claims = json.loads((exported / "report.json").read_text())["claims"]
    assert sum(line.startswith("| `quick` |") for line in head.splitlines()) == len(claims) > 0
    assert not any(line.startswith("| `bigger` |") for line in head.splitlines())


def test_a_report_is_rechecked_against_the_baseline_its_bench_named(exported):
    """A bench's `baseline` (rift-1000: rift) is what its published report compares with, and what the recheck
    rebuilds it with: a report compared with the default baseline instead fails the recheck."""
    methods = json.loads((exported / "report.json").read_text())["methods"]
    chosen = next(label for label, m in methods.items() if not m["baseline_group"])
    build_report([exported / "runs"], exported, baseline=chosen, title="quick preset", plots=False, html=False)
    compared = {
        r["vs_baseline"]["baseline"]
        for ev in json.loads((exported / "report.json").read_text())["evaluations"]
        for r in ev["rows"]
        if r.get("vs_baseline")
    }
    assert compared == {chosen}
    assert any(p.startswith("report.json") for p in recheck(exported))  # published.json does not name it yet
    (exported / "published.json").write_text(json.dumps({"baseline": chosen}))
    assert recheck(exported) == []
