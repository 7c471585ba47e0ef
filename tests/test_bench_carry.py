"""A bench's progress carried over a fresh checkout (`robustft bench save PRESET DIR` / `robustft bench restore
PRESET DIR`, or `--restore DIR` before a run): finished jobs come back and are not redone, models do not travel, a
cell with jobs left is trained again from its seed, and a restored result computed on another model is redone."""

import gzip
import json
import shutil

import pytest

from robustft.bench.run import BenchJobsFailed, bench, list_jobs, restore, save
from robustft.cli import main
from robustft.errors import ConfigError
from test_bench import tiny_bench

PARTIAL_CELL = "im/sst2/n32/s0"


def metrics_stamps(root):
    return {p.relative_to(root): p.stat().st_mtime_ns for p in root.rglob("metrics.json")}


@pytest.fixture
def saved(tiny_model_dir, tmp_path, monkeypatch):
    """A bench stopped with BERT's cell whole and IM's cell trained and evaluated but not attacked, saved, and its
    folder gone (a fresh checkout); returns (config, saved folder)."""
    monkeypatch.chdir(tmp_path)
    cfg = tiny_bench(tiny_model_dir, "runs/bench/tiny")
    bench(cfg, skip=f"{PARTIAL_CELL} attack*")
    save(cfg, tmp_path / "saved")
    shutil.rmtree("runs")
    return cfg, tmp_path / "saved"


def test_save_keeps_summaries_and_examples_but_no_model(saved):
    _, folder = saved
    files = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
    assert not [f for f in files if f.endswith((".safetensors", ".pt", ".bin"))]
    assert "cells/bert-sst2-n32-s0/metrics.json" in files
    assert "cells/bert-sst2-n32-s0/attack-pwws-sst2-dev-n2-s0/examples.jsonl.gz" in files
    lines = gzip.decompress((folder / "cells/im-sst2-n32-s0/eval-sst2-dev-n16/examples.jsonl.gz").read_bytes())
    assert len(lines.decode().splitlines()) == 16


def test_a_restored_bench_redoes_no_finished_job_and_retrains_only_cells_with_jobs_left(saved, tmp_path, capsys):
    cfg, folder = saved
    restore(cfg, folder)
    listed = list_jobs(cfg)
    out = capsys.readouterr().out
    assert "restored 6 finished and 0 partial jobs" in out and "1 model(s) to train again" in out
    assert listed[PARTIAL_CELL] == "partial" and listed["bert/sst2/n32/s0"] == "done"
    assert [k for k, v in listed.items() if v == "todo"] == [f"{PARTIAL_CELL} attack pwws/sst2/dev/n2"]
    root = tmp_path / "runs/bench/tiny/cells"
    before = metrics_stamps(root)
    result = bench(cfg)
    assert all(v == "done" for v in result["jobs"].values())
    after = metrics_stamps(root)
    redone = {str(p.parent) for p in before if after[p] != before[p]}
    assert redone == set()  # the retrained IM model came out the same, so its restored evaluations stand
    assert (root / "im-sst2-n32-s0" / "best").is_dir() and not (root / "bert-sst2-n32-s0" / "best").exists()


def test_saving_again_before_a_restored_cell_is_retrained_keeps_its_saved_training(saved, tmp_path):
    cfg, folder = saved
    restore(cfg, folder)  # the IM training comes back as its config only
    training = folder / "cells/im-sst2-n32-s0"
    log = (training / "train.log").read_text()
    save(cfg, folder)  # a session that ran nothing of that cell, saving before it ends
    assert (training / "metrics.json").is_file() and (training / "train.log").read_text() == log
    retraining = tmp_path / "runs/bench/tiny/cells/im-sst2-n32-s0"
    (retraining / "train.log").write_text("epoch 1 of the same seed\n")  # saved while training again
    save(cfg, folder)
    assert (training / "metrics.json").is_file() and (training / "train.log").read_text() == log
    restore(cfg, folder)
    listed = list_jobs(cfg)
    assert listed[PARTIAL_CELL] == "partial"


def test_a_restored_result_of_another_model_is_redone(saved, tmp_path, caplog):
    cfg, folder = saved
    restore(cfg, folder)
    config = tmp_path / "runs/bench/tiny/cells/im-sst2-n32-s0/eval-sst2-dev-n16/config.json"
    meta = json.loads(config.read_text())
    meta["inputs"]["model/model.safetensors"] = "0" * 64  # as if computed on a model trained otherwise
    config.write_text(json.dumps(meta))
    bench(cfg)
    assert "eval sst2/dev/n16 was computed on another model" in caplog.text
    assert json.loads(config.read_text())["inputs"]["model/model.safetensors"] != "0" * 64


def test_a_partial_attack_comes_back_and_is_finished(tiny_model_dir, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = tiny_bench(tiny_model_dir, "runs/bench/tiny", methods={"bert": {}})
    bench(cfg)
    attack = tmp_path / "runs/bench/tiny/cells/bert-sst2-n32-s0/attack-pwws-sst2-dev-n2-s0"
    first = (attack / "examples.jsonl").read_text().splitlines()[0]
    (attack / "examples.jsonl").write_text(first + "\n" + '{"torn": ')  # stopped during its second example
    (attack / "metrics.json").unlink()
    assert save(cfg, tmp_path / "saved") == {"finished": 3, "partial": 1}
    assert (attack / "examples.jsonl").read_text().endswith('{"torn": ')  # a log being appended to is only read
    shutil.rmtree("runs")
    restore(cfg, tmp_path / "saved")
    assert (attack / "examples.jsonl").read_text() == first + "\n"
    assert bench(cfg)["jobs"]["bert/sst2/n32/s0 attack pwws/sst2/dev/n2"] == "done"
    assert len((attack / "examples.jsonl").read_text().splitlines()) == 2


def test_a_job_added_to_a_restored_whole_cell_names_the_missing_weights(saved):
    cfg, folder = saved
    restore(cfg, folder)
    more = tiny_bench(cfg.model, cfg.output_dir, attacks=[*cfg.attacks, {"recipe": "pwws", "split": "dev", "n": 3}])
    with pytest.raises(BenchJobsFailed, match="weights are not in .*--only 'bert/sst2/n32/s0' --overwrite"):
        bench(more, only="bert/*")


def files_of(folder):
    return {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_save_and_restore_are_commands_and_the_old_save_flag_still_saves_with_a_warning(saved, tmp_path, capsys):
    cfg, folder = saved
    spec = tmp_path / "tiny.json"
    spec.write_text(json.dumps({k: v for k, v in vars(cfg).items() if k != "explicit_keys"}))
    assert main(["bench", "restore", str(spec), str(folder)]) == 0
    assert "restored 6 finished and 0 partial jobs" in capsys.readouterr().out
    assert main(["bench", "save", str(spec), str(tmp_path / "new")]) == 0
    assert main(["bench", str(spec), "--save", str(tmp_path / "old")]) == 0
    assert "deprecated: write `robustft bench save PRESET DIR`" in capsys.readouterr().err
    assert files_of(tmp_path / "new") == files_of(tmp_path / "old")
    assert "cells/bert-sst2-n32-s0/metrics.json" in {p.as_posix() for p in files_of(tmp_path / "new")}


def test_bench_commands_refuse_what_does_not_apply_and_write_nothing(tiny_model_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "tiny.yaml"
    config.write_text(json.dumps({"model": tiny_model_dir, "methods": {"bert": {}}, "progress": False}))
    cases = [
        (["bench", "restore", str(config), str(tmp_path / "nowhere")], "restore: "),
        (["bench", str(config), "--list", "--restore", str(tmp_path)], "unknown config key 'restore'"),
        (["bench", "save", str(config)], "robustft bench save: the following arguments are required: DIR"),
        (["bench", "save", str(config), "x", "--overwrite"], "unknown config key 'overwrite'"),
        (["bench", "save", str(config), "x", "--save", "y"], "unknown config key 'save'"),
        (["bench", str(config), "extra"], "unexpected argument 'extra'"),
        (["bench", "list"], "robustft bench list: the following arguments are required: PRESET|CONFIG"),
    ]
    for argv, message in cases:
        assert main(argv) == 2, argv
        assert message in capsys.readouterr().err, argv
    assert not (tmp_path / "runs").exists() and not (tmp_path / "x").exists()


def test_publishing_a_running_bench_saves_its_jobs_and_says_how_far_it_got(tiny_model_dir, tmp_path, monkeypatch):
    from robustft.results import recheck
    from studies.publish import main as publish_main
    from studies.publish import publish
    from studies.results_page import render_results_page

    monkeypatch.chdir(tmp_path)
    results = tmp_path / "docs/results"
    config = tmp_path / "tiny.json"
    values = {
        k: v for k, v in vars(tiny_bench(tiny_model_dir, "x")).items() if k in ("model", "methods", "train", "evals")
    }
    config.write_text(json.dumps({**values, "sizes": [32], "progress": False, "threads": 1, "precision": "fp32"}))
    from robustft.bench.presets import bench_config

    cfg = bench_config(str(config))
    cfg.output_dir = "runs/bench/tiny"
    publish(str(config), tmp_path / "runs/bench", "", results)  # a bench whose trainings have not finished
    assert not (results / "tiny").exists()  # has nothing to carry over and no report: skipped, no error
    bench(cfg, only="bert/*")
    publish(str(config), tmp_path / "runs/bench", "", results)
    about = json.loads((results / "tiny/published.json").read_text())
    assert (about["finished"], about["jobs"], about["wall_minutes"]) == (3, 6, None)  # the IM cell still to run
    assert list(about["estimate_vs_actual"]) == ["train"] and about["estimate_vs_actual"]["train"]["jobs"] == 1
    assert (results / "tiny/runs/cells/bert-sst2-n32-s0/eval-sst2-dev-n16/examples.jsonl.gz").is_file()
    report = (results / "tiny/report.md").read_text()
    assert "| bert |" in report and "| im |" not in report
    assert not (results / "tiny/report.html").exists()  # rebuildable by `robustft report`: never published
    assert "**Still running: 3 of 6 jobs finished**" in render_results_page(results)

    # a bench that reads another's runs in its report (the five-task AdvGLUE comparison reads the SST-2 study's)
    partner = tmp_path / "partner.json"
    partner.write_text(json.dumps({**json.loads(config.read_text()), "tasks": ["rte"], "report_with": ["tiny"]}))
    assert main(["bench", str(partner), "--only", "bert/*"]) == 0
    tasks = {
        e["task"] for e in json.loads((tmp_path / "runs/bench/partner/report/report.json").read_text())["evaluations"]
    }
    assert {"sst2", "rte"} <= tasks
    assert publish_main([str(partner), "--bench_root", "runs/bench"], root=tmp_path) == 0  # and RESULTS.md
    assert recheck(results / "partner") == []  # re-checked on both benches' published runs
    page = (tmp_path / "docs/RESULTS.md").read_text()
    assert page == render_results_page(results)
    assert "`robustft report docs/results/partner/runs docs/results/tiny/runs`" in page
    tasks = {e["task"] for e in json.loads((results / "partner/report.json").read_text())["evaluations"]}
    assert {"sst2", "rte"} <= tasks
    partner.write_text(json.dumps({**json.loads(partner.read_text()), "report_with": ["nowhere"]}))
    with pytest.raises(ConfigError, match="report_with names .*nowhere/runs, not published"):
        publish(str(partner), tmp_path / "runs/bench", "", results)


def test_a_deadline_starts_no_training_that_would_not_end_before_it(tiny_model_dir, tmp_path, caplog):
    import datetime

    past = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=1)
    cfg = tiny_bench(tiny_model_dir, tmp_path / "b", deadline=past.strftime("%Y-%m-%dT%H:%M:%S"))
    result = bench(cfg, only="bert/*")
    assert set(result["jobs"].values()) == {"todo"}  # nothing started, nothing failed
    assert "not starting bert/sst2/n32/s0: its training and attacks would not end before the deadline" in caplog.text
    later = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=1)
    cfg.deadline = later.strftime("%Y-%m-%dT%H:%M")
    assert set(bench(cfg, only="bert/*")["jobs"].values()) == {"done"}
    cfg.deadline = "tomorrow"
    with pytest.raises(ConfigError, match="deadline: 'tomorrow' is not a UTC time"):
        list_jobs(cfg)


def test_a_deadline_leaves_a_training_another_worker_runs_to_it_and_then_runs_its_attacks(
    tiny_model_dir, tmp_path, caplog, monkeypatch
):
    """Past the deadline, a worker finding a training that another worker is running neither calls it put off nor
    drops its cell's attacks: it waits for the model and attacks it (the training was started in time)."""
    import datetime
    import threading

    from robustft.bench import runner
    from robustft.bench.matrix import expand
    from robustft.runs import try_hold

    monkeypatch.setattr(runner, "WAIT_POLL_S", 0.05)
    past = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=1)
    cfg = tiny_bench(tiny_model_dir, tmp_path / "b", deadline=past.strftime("%Y-%m-%dT%H:%M:%S"))
    training = next(j for j in expand(cfg) if j.id == "bert/sst2/n32/s0")
    holding = threading.Event()

    def other_worker():
        with try_hold(runner.claim_path(tmp_path / "b", training.id)) as mine:
            assert mine
            holding.set()
            runner.RUNNERS["train"](training.config, resume=True, overwrite=False)

    thread = threading.Thread(target=other_worker)
    thread.start()
    holding.wait()
    result = bench(cfg, only="bert/*")
    thread.join()
    assert set(result["jobs"].values()) == {"done"}
    assert "not starting" not in caplog.text


def test_a_deadline_counts_a_cell_s_attacks_with_its_training(tiny_model_dir, tmp_path):
    """A model does not outlive the session, so a cell whose training would end in time but whose attacks would
    not is not started (rift-1000's FreeLB++: 140 minutes of training, then its attacks, in a 160-minute session)."""
    import datetime

    from robustft.bench.costs import price_jobs
    from robustft.bench.matrix import expand
    from robustft.bench.pricing.rates import slowdown
    from robustft.bench.run import deadline_for

    soon = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1)
    cfg = tiny_bench(tiny_model_dir, tmp_path / "b", deadline=soon.strftime("%Y-%m-%dT%H:%M"))
    jobs = expand(cfg)
    cell = next(j.cell for j in jobs if j.kind == "train")
    mine = [j for j in jobs if j.cell == cell]
    assert mine[0].kind == "train" and any(j.kind == "attack" for j in mine)
    train, whole = (sum(price_jobs(js, jobs, {})) * slowdown(cfg.threads) for js in (mine[:1], mine))
    counted = deadline_for(cfg, jobs, jobs, tmp_path / "nothing-finished").cell_seconds(cell)
    assert counted == pytest.approx(whole) and counted > train
