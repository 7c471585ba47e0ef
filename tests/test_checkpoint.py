"""Checkpoints survive a kill at any point of a save, fall back past a damaged one, and fail cleanly on OS errors."""

from __future__ import annotations

import errno
import json
import logging
import os
import pathlib
import random

import numpy as np
import pytest
import torch

from robustft import atomic
from robustft.atomic import WriteError, atomic_write_json
from robustft.training import checkpoint as ckpt
from robustft.training.checkpoint import (
    CheckpointError,
    CheckpointSchedule,
    complete_checkpoints,
    has_checkpoint,
    load_checkpoint,
    save_checkpoint,
)


def make_objects(seed: int = 0):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.Tanh(), torch.nn.Linear(5, 2))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0 / (1 + step))
    return {"model": model}, optimizer, scheduler


def train_steps(modules, optimizer, scheduler, n: int) -> None:
    for _ in range(n):
        x = torch.randn(4, 6)
        loss = modules["model"](x).pow(2).mean()
        loss.backward()
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()


def fingerprint(modules, optimizer, scheduler) -> dict:
    """Everything a resume must restore, plus the next draw of each RNG."""
    return {
        "weights": {k: v.clone() for k, v in modules["model"].state_dict().items()},
        "exp_avg": [optimizer.state[p]["exp_avg"].clone() for p in modules["model"].parameters()],
        "lr": scheduler.get_last_lr(),
        "torch": torch.rand(3),
        "python": random.random(),
        "numpy": np.random.rand(),
    }


def same(a: dict, b: dict) -> bool:
    return (
        all(torch.equal(a["weights"][k], b["weights"][k]) for k in a["weights"])
        and all(torch.equal(x, y) for x, y in zip(a["exp_avg"], b["exp_avg"], strict=True))
        and a["lr"] == b["lr"]
        and torch.equal(a["torch"], b["torch"])
        and a["python"] == b["python"]
        and a["numpy"] == b["numpy"]
    )


def save_and_fingerprint(folder, objects, step: int, **kw) -> dict:
    """Save at `step`, then record what a resume from this save must reproduce."""
    save_checkpoint(folder, *objects, {"step": step}, **kw)
    state = (random.getstate(), np.random.get_state(), torch.get_rng_state())
    fp = fingerprint(*objects)
    random.setstate(state[0]), np.random.set_state(state[1]), torch.set_rng_state(state[2])
    return fp


def resume(folder) -> tuple[dict, dict]:
    objects = make_objects(seed=99)  # different initial weights: the load must overwrite everything
    loop = load_checkpoint(folder, *objects)
    return loop, fingerprint(*objects)


@pytest.fixture
def two_saves(tmp_path):
    """A run with checkpoints at step 3 and step 6, and what resuming from each must give."""
    random.seed(0), np.random.seed(0)
    objects = make_objects()
    train_steps(*objects, 3)
    first = save_and_fingerprint(tmp_path / "checkpoint", objects, 3)
    train_steps(*objects, 3)
    second = save_and_fingerprint(tmp_path / "checkpoint", objects, 6)
    return tmp_path / "checkpoint", objects, first, second


def test_resume_restores_weights_optimizer_scheduler_and_rngs_exactly(two_saves):
    folder, _, _, second = two_saves
    loop, got = resume(folder)
    assert loop == {"step": 6} and same(got, second)


# --- a kill at every point of a save ---------------------------------------------------------------


class Killed(BaseException):
    """A kill -9: after it, nothing in the process runs (not even cleanup)."""


def dying(monkeypatch, kill_at: int) -> list[str]:
    """Patch every file-system call a save makes; the kill_at-th call and all later ones raise Killed."""
    calls: list[str] = []

    def wrap(name, real):
        def call(*args, **kwargs):
            calls.append(name)
            if len(calls) >= kill_at:
                raise Killed(name)
            return real(*args, **kwargs)

        return call

    monkeypatch.setattr(ckpt, "save_file", wrap("save_file", ckpt.save_file))
    monkeypatch.setattr(ckpt, "write_file", wrap("write_file", ckpt.write_file))
    monkeypatch.setattr(ckpt, "fsync_path", wrap("fsync", ckpt.fsync_path))
    monkeypatch.setattr(ckpt.shutil, "rmtree", wrap("rmtree", ckpt.shutil.rmtree))
    monkeypatch.setattr(pathlib.Path, "rename", wrap("rename", pathlib.Path.rename))
    monkeypatch.setattr(pathlib.Path, "mkdir", wrap("mkdir", pathlib.Path.mkdir))
    return calls


def test_a_kill_anywhere_in_a_save_resumes_from_the_newest_complete_checkpoint(two_saves, monkeypatch):
    folder, objects, _, second = two_saves
    train_steps(*objects, 3)
    rngs = random.getstate(), np.random.get_state(), torch.get_rng_state()  # each attempt saves this same state
    # a dry run counts the calls of one save (and the state a resume from it must reproduce)
    probe = dying(monkeypatch, kill_at=10**9)
    third = save_and_fingerprint(folder, objects, 9)
    n_calls, renamed_at = len(probe), probe.index("rename") + 1
    monkeypatch.undo()
    for name in complete_checkpoints(folder)[:1]:  # back to the step-3 and step-6 checkpoints
        ckpt.shutil.rmtree(name)
    assert n_calls >= 10

    for kill_at in range(1, n_calls + 1):
        random.setstate(rngs[0]), np.random.set_state(rngs[1]), torch.set_rng_state(rngs[2])
        calls = dying(monkeypatch, kill_at)
        with pytest.raises(Killed):
            save_checkpoint(folder, *objects, {"step": 9})
        monkeypatch.undo()
        loop, got = resume(folder)
        if kill_at <= renamed_at:  # killed before the new checkpoint was renamed into place
            assert loop == {"step": 6} and same(got, second), (kill_at, calls)
        else:  # renamed: the step-9 checkpoint is complete, whatever the cleanup did
            assert loop == {"step": 9} and same(got, third), (kill_at, calls)
            ckpt.shutil.rmtree(complete_checkpoints(folder)[0])  # back to the step-6 state for the next kill
        assert has_checkpoint(folder)


def test_leftover_partial_checkpoint_is_ignored_and_removed_by_the_next_save(two_saves):
    folder, objects, _, _ = two_saves
    partial = folder / "000099-step7.tmp"
    partial.mkdir()
    (partial / "weights.safetensors").write_bytes(b"half")
    assert resume(folder)[0] == {"step": 6}
    save_checkpoint(folder, *objects, {"step": 8})
    assert not partial.exists()
    assert [p.name for p in complete_checkpoints(folder)][0].endswith("-step8")  # numbered after the leftover


def test_only_the_newest_keep_checkpoints_stay(tmp_path):
    objects = make_objects()
    for step in range(1, 5):
        save_checkpoint(tmp_path, *objects, {"step": step}, keep=2)
    assert [p.name for p in complete_checkpoints(tmp_path)] == ["000004-step4", "000003-step3"]
    save_checkpoint(tmp_path, *objects, {"step": 5}, keep=1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["000005-step5"]


# --- damaged checkpoints ---------------------------------------------------------------------------


def truncate(path):
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def flip_a_byte(path):
    data = bytearray(path.read_bytes())
    data[-5] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("file", ["weights.safetensors", "optimizer.safetensors", "rng.safetensors", "state.json"])
@pytest.mark.parametrize("damage", [truncate, flip_a_byte, os.remove])
def test_damaged_newest_checkpoint_falls_back_to_the_previous_with_a_warning(two_saves, file, damage, caplog):
    folder, _, first, _ = two_saves
    damage(complete_checkpoints(folder)[0] / file)
    with caplog.at_level(logging.WARNING, logger=ckpt.__name__):
        loop, got = resume(folder)
    assert loop == {"step": 3} and same(got, first)
    assert "skipping damaged checkpoint" in caplog.text and file in caplog.text


def test_all_checkpoints_damaged_is_one_clear_error(two_saves):
    folder, _, _, _ = two_saves
    for checkpoint in complete_checkpoints(folder):
        truncate(checkpoint / "weights.safetensors")
    with pytest.raises(CheckpointError, match="no checkpoint in .* loads: .*truncated"):
        resume(folder)


def test_folder_without_a_complete_checkpoint_is_an_error_not_a_silent_restart(tmp_path):
    (tmp_path / "000001-step4.tmp").mkdir()
    assert not has_checkpoint(tmp_path)
    with pytest.raises(CheckpointError, match="no complete checkpoint"):
        resume(tmp_path)


def test_checkpoint_folder_from_before_the_manifest_still_loads(tmp_path):
    # format 1 wrote the files straight into checkpoint/: write one the old way and resume from it
    objects = make_objects()
    train_steps(*objects, 2)
    new = save_checkpoint(tmp_path / "new", *objects, {"step": 2})
    legacy = tmp_path / "checkpoint"
    legacy.mkdir()
    for name in ckpt.FILES:
        (legacy / name).write_bytes((new / name).read_bytes())
    assert resume(legacy)[0] == {"step": 2}
    save_checkpoint(legacy, *objects, {"step": 3})  # the next save supersedes the old files
    assert not (legacy / "state.json").exists() and resume(legacy)[0] == {"step": 3}


def test_format_1_kill_between_its_two_renames_resumes_from_the_newer_copy(tmp_path):
    # format 1 renamed checkpoint/ to checkpoint.old/, then checkpoint.tmp/ to checkpoint/: killed between
    # the two, the old loop found no checkpoint/ and restarted from step 0 with two complete copies on disk
    objects = make_objects()
    for step, suffix in ((3, ".old"), (6, ".tmp")):
        train_steps(*objects, 3)
        new = save_checkpoint(tmp_path / f"new{step}", *objects, {"step": step})
        copy = tmp_path / f"checkpoint{suffix}"
        copy.mkdir()
        for name in ckpt.FILES:
            (copy / name).write_bytes((new / name).read_bytes())
    folder = tmp_path / "checkpoint"
    assert has_checkpoint(folder) and resume(folder)[0] == {"step": 6}
    save_checkpoint(folder, *objects, {"step": 7})
    assert not (tmp_path / "checkpoint.old").exists() and not (tmp_path / "checkpoint.tmp").exists()
    assert resume(folder)[0] == {"step": 7}


def test_tied_weights_are_saved_and_restored(tmp_path):
    model = torch.nn.Sequential(torch.nn.Embedding(10, 4), torch.nn.Linear(4, 10, bias=False))
    model[1].weight = model[0].weight  # tied, as a masked-LM decoder is to the word embeddings
    optimizer = torch.optim.AdamW(model.parameters())
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)
    save_checkpoint(tmp_path, {"model": model}, optimizer, scheduler, {"step": 0})
    assert load_checkpoint(tmp_path, {"model": model}, optimizer, scheduler) == {"step": 0}


# --- operating-system faults -----------------------------------------------------------------------


def enospc(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


def erofs(*args, **kwargs):
    raise OSError(errno.EROFS, "Read-only file system")


@pytest.mark.parametrize("where", ["save_file", "write_file", "fsync_path"])
def test_disk_full_during_a_save_is_one_line_and_keeps_the_previous_checkpoints(two_saves, where, monkeypatch):
    folder, objects, _, second = two_saves
    monkeypatch.setattr(ckpt, where, enospc)
    with pytest.raises(WriteError) as err:
        save_checkpoint(folder, *objects, {"step": 9})
    monkeypatch.undo()
    message = str(err.value)
    assert "No space left on device" in message and str(folder) in message and "\n" not in message
    assert not list(folder.glob("*.tmp"))  # the partial checkpoint is gone
    loop, got = resume(folder)
    assert loop == {"step": 6} and same(got, second)


def test_read_only_run_folder_is_one_line_naming_it(tmp_path, monkeypatch):
    objects = make_objects()
    monkeypatch.setattr(pathlib.Path, "mkdir", erofs)
    with pytest.raises(WriteError, match=f"{tmp_path / 'checkpoint'}: Read-only file system"):
        save_checkpoint(tmp_path / "checkpoint", *objects, {"step": 1})


def test_atomic_write_is_durable_and_leaves_the_old_file_on_failure(tmp_path, monkeypatch):
    target = tmp_path / "metrics.json"
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(os.readlink(f"/proc/self/fd/{fd}")) or real_fsync(fd))
    atomic_write_json(target, {"accuracy": 0.9})
    assert str(target.with_name(f"metrics.json.{os.getpid()}.tmp")) in synced  # the file, before its rename
    assert str(tmp_path) in synced  # and the folder, after it
    monkeypatch.undo()

    for fault, patch in (("No space left on device", ("write", enospc)), ("Read-only file system", ("open", erofs))):
        monkeypatch.setattr(atomic.os, patch[0], patch[1])
        with pytest.raises(WriteError, match=f"cannot write {target}: {fault}"):
            atomic_write_json(target, {"accuracy": 0.1})
        monkeypatch.undo()
        assert json.loads(target.read_text()) == {"accuracy": 0.9}
        assert [p.name for p in tmp_path.iterdir()] == ["metrics.json"]


# --- how often -------------------------------------------------------------------------------------


def test_schedule_by_steps_by_time_or_both():
    now = [0.0]
    clock = lambda: now[0]  # noqa: E731
    by_time = CheckpointSchedule(every_steps=0, every_s=60, clock=clock)
    now[0] = 59
    assert not by_time.due(1)
    now[0] = 60
    assert by_time.due(2)
    by_time.saved()
    now[0] = 100
    assert not by_time.due(3)
    by_steps = CheckpointSchedule(every_steps=4, every_s=0, clock=clock)
    assert [s for s in range(1, 10) if by_steps.due(s)] == [4, 8]
    assert not any(CheckpointSchedule(0, 0, clock).due(s) for s in range(1, 100))
    with pytest.raises(ValueError):
        CheckpointSchedule(every_steps=-1)
