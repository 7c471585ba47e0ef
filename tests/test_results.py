"""Committed results (docs/results/<preset>/) re-checked against the code, as RobustBench re-checks its
model cards: every metrics.json is what the code computes from the run's examples, and report.json and
report.md are what `robustft report` regenerates from the committed runs."""

import json
from pathlib import Path

import pytest

from report_fixtures import write_fixture_runs
from robustft.report import build_report
from robustft.results import recheck
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


def test_an_example_file_altered_with_its_metrics_is_caught_by_the_report(exported):
    """Altering a committed per-example file and its metrics.json together still fails: the report's accuracies,
    intervals and verdicts are regenerated from the examples."""
    import gzip

    from robustft.report.folders import load_runs
    from robustft.results import check_run_metrics

    folder = exported / "runs" / "attack-im-s0"
    lines = [json.loads(line) for line in gzip.open(folder / "examples.jsonl.gz", "rt")]
    kept = next(line for line in lines if line["result"] == "failed")
    kept["result"] = "succeeded"  # one example the attack did not flip, now flipped
    with gzip.open(folder / "examples.jsonl.gz", "wt") as f:
        f.writelines(json.dumps(line) + "\n" for line in lines)
    (run,) = [r for r in load_runs([exported / "runs"]) if r.name == "attack-im-s0"]
    metrics = json.loads((folder / "metrics.json").read_text())
    from robustft.attacks.results import AttackRecord, summarize

    metrics |= summarize([AttackRecord.from_dict(r) for r in run.examples])  # the forger's consistent metrics
    (folder / "metrics.json").write_text(json.dumps(metrics))
    (run,) = [r for r in load_runs([exported / "runs"]) if r.name == "attack-im-s0"]
    assert check_run_metrics(run) == []
    problems = recheck(exported)
    assert problems and all(p.startswith("report.") for p in problems)
    assert any("/evaluations" in p for p in problems)


def test_the_results_page_and_preset_pages_are_generated_from_the_committed_reports():
    from studies.results_page import load_presets, render_preset_page, render_results_page

    page = RESULTS.parent / "RESULTS.md"
    if not any(RESULTS.glob("*/report.md")):
        pytest.skip("no preset published yet (studies.publish)")
    text = page.read_text(encoding="utf-8")
    assert text == render_results_page(RESULTS)
    for preset in load_presets(RESULTS):
        assert (preset.folder / "README.md").read_text(encoding="utf-8") == render_preset_page(preset), preset.name


def test_the_committed_results_page_opens_with_the_bottom_line_and_stays_short():
    page = RESULTS.parent / "RESULTS.md"
    if not page.is_file():
        pytest.skip("no results page yet")
    lines = page.read_text(encoding="utf-8").splitlines()
    assert len(lines) < 600
    first_screen = lines[:40]
    assert "## Bottom line" in first_screen
    start = first_screen.index("## Bottom line") + 2
    end = first_screen.index("", start)  # the whole table is on the first screen
    header, _, *rows = first_screen[start:end]
    assert header.startswith("| claim: measured on | study (status) | paper | ours")
    assert header.endswith("| verdict | what would settle it |") and rows
    for row in rows:  # every row a status; none from one seed or an unfinished study carries a verdict word
        assert any(status in row for status in ("(finished", "(partial", "(lost"))
        if "(partial" in row or "(lost" in row or "| 1 |" in row or "| 1 x " in row:
            assert "| no verdict |" in row, row


def test_the_published_compute_time_sums_each_jobs_own_time_over_its_sessions(tmp_path):
    from robustft.bench.costs import measured_seconds

    runs = write_fixture_runs(tmp_path / "bench")
    assert measured_seconds(runs / "train-std-s1") == 61.0  # the loop's time, accumulated across resumes
    attack = runs / "attack-im-s0"
    lines = (attack / "examples.jsonl").read_text().splitlines()
    assert measured_seconds(attack) == pytest.approx(0.1 * len(lines))  # per-example seconds, summed
    assert measured_seconds(runs / "eval-im-s0") == 0.0


def test_the_published_machine_names_every_machine_its_jobs_ran_on():
    """Runs from a CPU with native bf16 and one without give other weights and times: the results page must say
    which machine ran how many jobs, and which jobs did not record it."""
    from studies.publish import machines

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
    from studies.results_page import how_it_ran

    about = {"command": "robustft bench quick", "jobs": 3, "wall_minutes": None, "machine": "2 CPU cores"}
    about |= {"expected_minutes": 1.0, "git_commit": "abc1234"}
    assert "code abc1234." in how_it_ran("quick", about, has_runs=True)
    several = how_it_ran("quick", {**about, "job_commits": 3}, has_runs=True)
    assert "code abc1234 (its last call; its finished jobs ran on 3 commits" in several


def test_a_running_preset_gets_no_verdict_and_the_page_says_why(exported):
    from studies.publish import rebuild
    from studies.results_page import render_results_page

    about = {"command": "robustft bench quick", "jobs": 10, "finished": 4, "wall_minutes": None}
    about |= {"machine": "2 CPU cores", "expected_minutes": 1.0, "git_commit": "abc1234"}
    (exported / "published.json").write_text(json.dumps(about))
    rebuild(exported)  # as publishing builds it: judged with the preset's standing
    claims = json.loads((exported / "report.json").read_text())["claims"]
    assert claims and all(c["verdict"].startswith("no verdict") for c in claims)
    assert all("still running, 4 of 10 jobs" in c["verdict"] for c in claims)
    page = render_results_page(exported.parent)
    head, _, rest = page.partition("\n## `quick`")
    assert "## Bottom line" in head and "**Still running: 4 of 10 jobs finished**" in rest
    rows = [line for line in head.splitlines() if "| `quick` (partial: 4 of 10 jobs) |" in line]
    assert len(rows) == len(claims) and all("| no verdict |" in row for row in rows)
    assert "the preset's other 6 jobs" in rows[0]
    assert recheck(exported) == []


def test_a_preset_that_reports_with_another_does_not_repeat_its_claims(exported):
    """im-lowresource-1000's report also reads the 16-shot runs: their claims are the 16-shot preset's, which the
    page must list once, under the preset that ran them."""
    from studies.results_page import render_results_page

    about = {"command": "robustft bench quick", "jobs": 10, "wall_minutes": None, "machine": "2 CPU cores"}
    about |= {"expected_minutes": 1.0, "git_commit": "abc1234"}
    (exported / "published.json").write_text(json.dumps(about))
    borrower = exported.parent / "bigger"
    (borrower / "runs").mkdir(parents=True)  # none of its own jobs finished yet
    build_report([borrower / "runs", exported / "runs"], borrower, title="bigger", plots=False, html=False)
    (borrower / "published.json").write_text(json.dumps({**about, "report_with": ["quick"]}))
    page = render_results_page(exported.parent)
    head = page.partition("\n## `")[0]
    claims = json.loads((exported / "report.json").read_text())["claims"]
    assert sum("| `quick` (finished) |" in line for line in head.splitlines()) == len(claims) > 0
    assert not any("`bigger`" in line for line in head.splitlines())
    bigger = page.partition("\n## `bigger`")[2]
    assert "No claim of the papers is answered here." in bigger.partition("\n## `")[0]


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


def test_a_study_on_another_backbone_names_it_in_each_bottom_line_row(exported):
    """A reader of the bottom line must tell an MPNet row from a MiniLM one without opening the study: the backbone
    comes from the report's own methods, MiniLM (the default) unnamed."""
    from studies.results_page import render_results_page

    about = {"command": "robustft bench quick", "jobs": 10, "wall_minutes": None, "machine": "2 CPU cores"}
    (exported / "published.json").write_text(json.dumps({**about, "expected_minutes": 1.0, "git_commit": "abc"}))

    def rows_on(model):
        report = json.loads((exported / "report.json").read_text())
        report["methods"] = {name: {**m, "model": model} for name, m in report["methods"].items()}
        (exported / "report.json").write_text(json.dumps(report))
        head = render_results_page(exported.parent).partition("\n## `")[0]
        return [line.split(" | ")[0] for line in head.splitlines() if "| `quick` (finished) |" in line]

    assert rows_on("minilm") and not any(" on " in row.rsplit(")", 1)[-1] for row in rows_on("minilm"))
    assert rows_on("mpnet") and all(row.endswith(", on MPNet") for row in rows_on("mpnet"))


def test_the_results_page_reads_advglue_against_the_majority_class_and_lists_the_registered_comparisons():
    """Issue 63: the bottom line names the majority class beside every AdvGLUE row (every model there is below it),
    no page keeps the withdrawn "rules out +8.3" for the five-task score, and the pre-registered IM - EX-BERT rows are
    published."""
    docs = RESULTS.parent
    page = (docs / "RESULTS.md").read_text(encoding="utf-8")
    bottom = page.split("## Bottom line", 1)[1].split("\n## ", 1)[0]
    advglue = [line for line in bottom.splitlines() if line.startswith("| IM-BERT") and "advglue" in line.lower()]
    advglue += [line for line in bottom.splitlines() if line.startswith("| IM-BERT") and "AdvGLUE official" in line]
    assert advglue and all("majority class" in line for line in advglue)
    for name in ("RESULTS.md", "im_bert.md", "statistics.md", "report.md"):
        text = (docs / name).read_text(encoding="utf-8")
        assert "rules out +8.3" not in text and "+1.5 [-3.5, +6.0]" not in text, name
    for study in ("im-exact-minilm", "mpnet-study"):
        section = page.split(f"## `{study}`", 1)[1].split("\n## ", 1)[0]
        rows = [line for line in section.splitlines() if line.startswith("| im-exact - ex-bert |")]
        assert len(rows) == 3, study  # SST-2 dev, AdvGLUE SST-2 and TextFooler
