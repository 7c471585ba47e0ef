"""Durable atomic file writes: write a temporary file, fsync it, rename it into place, fsync the folder.

A crash (or a power cut) leaves either the old file or the new one, never half a file. A write that fails
(disk full, read-only folder, no permission) raises `WriteError` naming the path, removes its temporary
file and leaves the old file untouched.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

from robustft.errors import RobustftError


class WriteError(RobustftError):
    """A file or folder could not be written; what was there before is intact."""


@contextlib.contextmanager
def os_errors(path: Path, doing: str = "write") -> Iterator[None]:
    """Turn an OSError (ENOSPC, EROFS, EACCES, ...) into a one-line WriteError naming `path`."""
    try:
        yield
    except WriteError:
        raise
    except OSError as exc:
        reason = exc.strerror or str(exc) or type(exc).__name__
        raise WriteError(f"cannot {doing} {path}: {reason}; anything written before is intact") from None


def fsync_path(path: Path) -> None:
    """Flush a file's or a folder's content (a folder: its entries, i.e. renames into it) to the disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_file(path: Path, data: bytes) -> None:
    """Write and fsync `path` (not atomic on its own: write into a temporary name or folder)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path = Path(path)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    with os_errors(path):
        try:
            write_file(tmp, data)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise
        fsync_path(path.parent)


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: Path, data) -> None:
    atomic_write_text(path, json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")


def swap_folder(tmp: Path, folder: Path) -> None:
    """Put the complete folder `tmp` in place of `folder` (e.g. a new best model over the old one).

    The files of `tmp` are fsync'd, then `folder` is renamed to `<folder>.old`, `tmp` to `folder`, and the
    old copy removed. A kill between the two renames leaves `<folder>.old` and the complete `tmp`:
    `recover_folder(folder)` finishes the swap, so nothing written is ever lost.
    """
    tmp, folder = Path(tmp), Path(folder)
    old = folder.with_name(folder.name + ".old")
    with os_errors(folder, "replace"):
        for path in sorted(tmp.rglob("*"), reverse=True):  # files first, then their folders
            if path.is_file():  # safetensors creates its file 0600: every file gets the mode `write_file` gives
                os.chmod(path, 0o666 & ~umask())
            fsync_path(path)
        fsync_path(tmp)
        if old.exists():
            shutil.rmtree(old)
        if folder.exists():
            os.rename(folder, old)
        os.rename(tmp, folder)
        fsync_path(folder.parent)
    shutil.rmtree(old, ignore_errors=True)


def umask() -> int:
    """This process's umask (reading it means setting it: set back at once)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def recover_folder(folder: Path) -> None:
    """Finish a `swap_folder` killed between its renames; does nothing in any other state."""
    folder = Path(folder)
    old = folder.with_name(folder.name + ".old")
    tmp = folder.with_name(folder.name + ".tmp")
    if folder.exists() or not old.exists():
        return  # nothing was interrupted (a .tmp without .old may be half-written: never promoted)
    with os_errors(folder, "recover"):
        os.rename(tmp if tmp.exists() else old, folder)  # .old exists only once .tmp was complete
        fsync_path(folder.parent)
    shutil.rmtree(old, ignore_errors=True)
