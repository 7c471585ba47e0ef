"""Run folders a user can trust: one process writes a folder at a time (the second is refused, naming the first's
pid), `--overwrite` deletes only what robustft wrote, a folder is repaired only once it is known to be robustft's,
every reader agrees on what a damaged per-example line is, and each refusal names its real cause and path."""

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from robustft import runs
from robustft.atomic import WriteError
from robustft.cli import main
from robustft.config import EvalConfig
from robustft.errors import ConfigError, DataFormatError


def training(model: str, out: Path, seed: int) -> subprocess.Popen:
    argv = [sys.executable, "-m", "robustft.cli", "train", "--model", model, "--output_dir", str(out), "--overwrite"]
    argv += ["--seed", str(seed), "--n_train", "16", "--n_dev", "8", "--epochs", "1", "--batch_size", "8"]
    argv += ["--max_length", "32", "--precision", "fp32", "--progress", "false", "--threads", "1"]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def lock_holder(folder: Path, procs: list[subprocess.Popen], timeout_s: float = 120.0) -> subprocess.Popen:
    """The process whose pid the run folder's lock file names (it writes it right after taking the lock)."""
    by_pid = {str(p.pid): p for p in procs}
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        lock = folder / runs.LOCK
        pid = lock.read_text().strip() if lock.is_file() else ""
        if pid in by_pid:
            return by_pid[pid]
        if all(p.poll() is not None for p in procs):
            break
        time.sleep(0.01)
    raise AssertionError(f"no process took the lock: {[p.communicate() for p in procs]}")


@pytest.mark.slow
def test_two_overwriting_trainings_on_one_folder_run_one_and_refuse_the_other(tiny_model_dir, tmp_path):
    out = tmp_path / "X"
    seeds = {}
    procs = []
    for seed in (1, 2):  # other settings, so that a mix of the two runs would show in the hashes
        procs.append(training(tiny_model_dir, out, seed))
        seeds[procs[-1].pid] = seed
    try:
        holder = lock_holder(out, procs)
        holder.send_signal(signal.SIGSTOP)  # holds the lock as long as the other needs to try: no timing luck
        other = next(p for p in procs if p is not holder)
        _, err = other.communicate(timeout=300)
        holder.send_signal(signal.SIGCONT)
        assert other.returncode != 0
        assert f"pid {holder.pid}" in err and "in use by another robustft process" in err and str(out) in err
        _, held_err = holder.communicate(timeout=300)
        assert holder.returncode == 0, held_err
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGCONT)
                p.kill()
                p.wait()
    config = json.loads((out / "config.json").read_text())
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["complete"] and metrics["hash"] == config["hash"]
    assert config["config"]["seed"] == seeds[holder.pid]


def test_eval_of_a_folder_that_is_not_a_run_leaves_its_best_old_alone(tiny_model_dir, tmp_path, capsys):
    folder = tmp_path / "D"
    shutil.copytree(tiny_model_dir, folder / "best.old")  # the user's own folder, named like a swap's leftover
    code = main(["eval", "--model", str(folder), "--task", "sst2", "--split", "dev", "-n", "2"] + [
        "--output_dir", str(tmp_path / "out"), "--progress", "false"
    ])  # fmt: skip
    assert code != 0 and str(folder) in capsys.readouterr().err
    assert sorted(p.name for p in folder.iterdir()) == ["best.old"]
    assert (folder / "best.old" / "config.json").is_file()


def test_an_interrupted_best_model_swap_is_finished_in_a_robustft_train_run(tmp_path, tiny_model_dir):
    run = tmp_path / "run"
    shutil.copytree(tiny_model_dir, run / "best.old")  # a kill between swap_folder's two renames
    (run / "config.json").write_text(json.dumps({runs.MARK: 1, "verb": "train", "config": {"seed": 3}, "hash": "h"}))
    resolved = runs.resolve(run)
    assert resolved.model == str(run / "best") and resolved.train_config == {"seed": 3}
    assert (run / "best" / "config.json").is_file() and not (run / "best.old").exists()


def eval_run(path: Path, **kw):
    return runs.open_run(path, EvalConfig(model="m", **kw), {})


def test_overwrite_deletes_only_what_robustft_wrote_and_names_what_it_kept(tmp_path, caplog):
    path = tmp_path / "r"
    with eval_run(path) as run:
        run.write_records([{"index": 0}])
        run.write_metrics({"n": 1}, complete=False)
        (path / "eval.log").write_text("old log")
        (path / "best.old").mkdir()
    (path / "notes.txt").write_text("mine")
    (path / "mine").mkdir()
    with caplog.at_level(logging.WARNING, logger="robustft.runs"):
        runs.open_run(path, EvalConfig(model="m"), {}, overwrite=True).close()
    assert sorted(p.name for p in path.iterdir() if not p.name.startswith(".lock")) == [
        "config.json",
        "mine",
        "notes.txt",
    ]
    assert (path / "notes.txt").read_text() == "mine"
    assert "kept 2 file(s) robustft did not write: mine, notes.txt" in caplog.text and str(path) in caplog.text


def test_a_folder_in_use_is_reported_as_in_use_with_the_holder_pid_and_nothing_is_deleted(tmp_path):
    path = tmp_path / "r"
    with eval_run(path) as run:
        run.write_records([{"index": 0}])
        for kw in ({}, {"resume": True}, {"overwrite": True}):
            with pytest.raises(runs.FolderInUse) as refused:
                runs.open_run(path, EvalConfig(model="m"), {}, **kw)
            message = str(refused.value)
            assert f"{path} is in use by another robustft process (pid {os.getpid()}" in message
            assert "hash" not in message and "settings" not in message
        with pytest.raises(runs.FolderInUse, match=f"pid {os.getpid()}"):
            runs.delete_run(path, "eval")  # the bench's delete of a stale job waits its turn too
        assert runs.load_records(path / "examples.jsonl") == [{"index": 0}]


def test_an_unfinished_run_of_the_same_settings_is_not_called_a_changed_hash(tmp_path):
    eval_run(tmp_path / "r").close()
    with pytest.raises(ConfigError, match=r"an unfinished run \(same settings and inputs\); pass --resume") as refused:
        eval_run(tmp_path / "r")
    assert "hash differs" not in str(refused.value)


def test_a_shard_being_run_is_neither_restarted_nor_cleared_by_another_process(tmp_path):
    path = tmp_path / "r"
    with runs.open_run(path, EvalConfig(model="m", shard="0/2"), {}, shard=(0, 2)) as shard:
        shard.write_records([{"index": 0}])
        with pytest.raises(runs.FolderInUse, match=r"pid \d+, lock \.lock\.shard-0-of-2"):
            runs.open_run(path, EvalConfig(model="m", shard="0/2"), {}, shard=(0, 2), overwrite=True)
        with pytest.raises(runs.FolderInUse, match=r"lock \.lock\.shard-0-of-2"):
            runs.open_run(path, EvalConfig(model="m"), {}, overwrite=True)  # the whole run over the shard
        assert (path / "examples.shard-0-of-2.jsonl").is_file()


def test_overwrite_through_symbolic_links_unlinks_them_and_keeps_their_targets(tmp_path):
    real, elsewhere = tmp_path / "real", tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "weights.bin").write_text("not robustft's to delete")
    with eval_run(real) as run:
        run.write_records([{"index": 0}])
        (real / "best").symlink_to(elsewhere)
    link = tmp_path / "link"
    link.symlink_to(real)
    runs.open_run(link, EvalConfig(model="m"), {}, overwrite=True).close()
    assert link.is_symlink() and not (real / "best").exists() and not (real / "examples.jsonl").exists()
    assert (elsewhere / "weights.bin").read_text() == "not robustft's to delete"


def test_a_failed_removal_names_the_path(tmp_path, monkeypatch):
    with eval_run(tmp_path / "r") as run:
        run.write_records([{"index": 0}])

    def refuse(self, missing_ok=False):
        raise PermissionError(13, "Permission denied")  # no filename, as shutil's symlink refusal has none

    monkeypatch.setattr(Path, "unlink", refuse)
    with pytest.raises(WriteError, match=f"cannot delete {tmp_path / 'r'}/.*: Permission denied"):
        runs.open_run(tmp_path / "r", EvalConfig(model="m"), {}, overwrite=True)


def test_every_reader_agrees_on_what_a_damaged_line_is(tmp_path, caplog):
    from robustft.bench.costs import finished_examples

    folder = tmp_path / "attack"
    folder.mkdir()
    lines = [json.dumps({"index": 0, "seconds": 1.0}), "{not json", json.dumps({"index": 2, "seconds": 3.0})]
    examples = folder / "examples.jsonl"
    examples.write_text("\n".join(lines) + '\n{"index": 3, "sec')  # line 2 damaged, line 4 torn
    with pytest.raises(DataFormatError, match=r"examples.jsonl:2: not a JSON object"):
        runs.read_records(examples)  # the report: a finished run's damaged file is refused, naming the line
    with caplog.at_level(logging.WARNING, logger="robustft.runs"):
        assert [r["index"] for r in finished_examples(folder)] == [0, 2]  # an estimate: left out, with a warning
    assert "left out 1 damaged line(s) (line 2)" in caplog.text
    assert examples.read_text().endswith('"sec')  # readers never change another process's file
    assert [r["index"] for r in runs.load_records(examples)] == [0, 2]  # the owner drops both and redoes them
    assert examples.read_text() == "".join(json.dumps(json.loads(line), sort_keys=True) + "\n" for line in lines[::2])
