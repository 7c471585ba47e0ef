"""One process writes a run folder at a time: an exclusive `flock` on a lock file inside it, which holds the
holder's pid so that a refused process can say who has it. The kernel releases the lock when the holder exits
(or is killed), so a stale lock file never blocks anyone."""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from robustft.errors import ConfigError
from robustft.runs.names import LOCK, is_lock


class FolderInUse(ConfigError):
    """Another robustft process holds the run folder's lock."""


def holder_of(lock_file: Path) -> str:
    """The pid written in a lock file ('unknown' if the holder has not written it yet)."""
    for _ in range(20):  # the holder writes its pid right after taking the lock
        try:
            pid = Path(lock_file).read_text(encoding="utf-8").strip()
        except OSError:
            pid = ""
        if pid:
            return pid
        time.sleep(0.01)
    return "unknown"


def in_use(folder: Path, lock_file: Path) -> FolderInUse:
    return FolderInUse(
        f"{folder} is in use by another robustft process (pid {holder_of(lock_file)}, lock {lock_file.name}); "
        f"wait for it to finish, or choose another folder"
    )


def take(folder: Path, name: str = LOCK) -> IO:
    """Lock `folder` (which exists) for this process and record its pid; FolderInUse if another process has it.
    Release with `release` (or by exiting)."""
    lock_file = Path(folder) / name
    handle = open(lock_file, "a+", encoding="utf-8")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise in_use(Path(folder), lock_file) from None
    handle.seek(0)
    if not handle.read(64).strip().isdigit() and lock_file.stat().st_size:  # ours hold a pid or nothing
        release(handle)
        raise ConfigError(f"{lock_file} is not a robustft lock (it holds other text): refusing to overwrite it")
    handle.seek(0)
    handle.truncate()
    handle.write(str(os.getpid()))
    handle.flush()
    return handle


def release(handle: IO | None) -> None:
    if handle is not None and not handle.closed:
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()


def refuse_if_others_hold(folder: Path, mine: set[str]) -> None:
    """FolderInUse if another process holds any lock file of `folder` but those in `mine` (e.g. a shard's, while
    a whole-run overwrite would delete that shard's files)."""
    for lock_file in sorted(p for p in Path(folder).iterdir() if is_lock(p.name) and p.is_file()):
        if lock_file.name in mine:
            continue
        with open(lock_file, "a+", encoding="utf-8") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise in_use(Path(folder), lock_file) from None
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextmanager
def hold(path: Path) -> Iterator[None]:
    """A blocking lock on `path` (short critical sections shared by the shards of a run)."""
    with open(path, "a+", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextmanager
def try_hold(path: Path) -> Iterator[bool]:
    """A non-blocking lock on `path`: yields True while this process holds it, False (at once) when another
    process does. Released when the block ends or the process dies."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+", encoding="utf-8") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
