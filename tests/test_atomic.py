"""Folder swaps (the best model over the previous one) survive a kill between their renames."""

from __future__ import annotations

import errno
import os

import pytest

from robustft import atomic
from robustft.atomic import WriteError, recover_folder, swap_folder


def folder_with(path, text: str):
    path.mkdir()
    (path / "model.safetensors").write_text(text)
    (path / "sub").mkdir()
    (path / "sub" / "config.json").write_text(text)
    return path


def content(path) -> str:
    return (path / "model.safetensors").read_text()


def test_swap_replaces_the_folder_and_leaves_nothing_behind(tmp_path):
    best = folder_with(tmp_path / "best", "old")
    swap_folder(folder_with(tmp_path / "best.tmp", "new"), best)
    assert content(best) == "new" and sorted(p.name for p in tmp_path.iterdir()) == ["best"]


@pytest.mark.parametrize("rename_that_dies,expected", [(1, "old"), (2, "new")])
def test_kill_at_either_rename_is_recovered_without_losing_a_model(tmp_path, monkeypatch, rename_that_dies, expected):
    best = folder_with(tmp_path / "best", "old")
    tmp = folder_with(tmp_path / "best.tmp", "new")
    renames, real_rename = [], os.rename

    def dying_rename(src, dst):
        renames.append(src)
        if len(renames) == rename_that_dies:
            raise KeyboardInterrupt  # the process dies here: nothing after it runs
        return real_rename(src, dst)

    monkeypatch.setattr(atomic.os, "rename", dying_rename)
    with pytest.raises(KeyboardInterrupt):
        swap_folder(tmp, best)
    monkeypatch.undo()
    # killed before the first rename: the old model is in place; between the renames: best/ is missing
    assert best.exists() == (rename_that_dies == 1)
    recover_folder(best)
    assert content(best) == expected and (best / "sub" / "config.json").read_text() == expected
    assert not (tmp_path / "best.old").exists()


def test_recover_never_promotes_a_half_written_first_copy(tmp_path):
    folder_with(tmp_path / "best.tmp", "partial")  # killed while the very first best model was written
    recover_folder(tmp_path / "best")
    assert not (tmp_path / "best").exists()


def test_disk_full_during_a_swap_is_one_line_and_keeps_the_old_folder(tmp_path, monkeypatch):
    best = folder_with(tmp_path / "best", "old")
    tmp = folder_with(tmp_path / "best.tmp", "new")

    def enospc(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic.os, "fsync", enospc)
    with pytest.raises(WriteError, match=f"cannot replace {best}: No space left on device"):
        swap_folder(tmp, best)
    monkeypatch.undo()
    assert content(best) == "old"
