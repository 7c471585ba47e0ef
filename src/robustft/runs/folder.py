"""Creating, checking, clearing and deleting a run folder (opening one for a verb is `opening.open_run`).

Clearing (`--overwrite`) and deleting take what robustft wrote, and only that: other files stay, named in a
warning, and a user's file inside robustft's own folders (best/notes.txt) stops the clearing before anything is
deleted. A symbolic link is unlinked, never followed, and every failure names its path.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

from robustft.atomic import WriteError, os_errors
from robustft.errors import ConfigError
from robustft.runs import lock
from robustft.runs.description import read_description
from robustft.runs.names import LOCK, MODEL_FILE, OUR_FOLDERS, is_lock, is_ours

log = logging.getLogger("robustft.runs")


def contents(path: Path) -> list[Path]:
    """What a folder holds besides lock files."""
    return [p for p in path.iterdir() if not is_lock(p.name)] if path.is_dir() else []


def check_target(path: Path, verb: str, *, locked: bool = False, overwrite: bool = False) -> dict | None:
    """Refuse a path robustft must not write a `verb` run into (a file, a foreign non-empty folder, another verb's
    run); returns its config.json when it holds a run. Only reads, so a foreign folder gets no lock file either.

    A folder with a robustft lock file is robustft's: before its lock is taken (`locked` False) it may be in the
    middle of a write by the holder (config.json being replaced), so it is judged again under the lock. There, one
    holding only robustft's files without a config.json (a run killed while it was set up or overwritten) is
    started again with `overwrite`, and refused, saying so, without it."""
    if path.exists() and not path.is_dir():
        raise ConfigError(f"output_dir: {path} is a file, not a folder")
    items = contents(path)
    if not items:
        return None
    saved = read_description(path)
    if saved is None:
        marked = any(is_lock(p.name) for p in path.iterdir())
        if marked and not locked:
            return None
        if marked and all(is_ours(p.name) for p in items):
            if overwrite:
                return None
            raise ConfigError(
                f"output_dir: {path} holds robustft files but no config.json (a run killed while it was set up or "
                f"overwritten): pass --overwrite to start again, or choose another folder"
            )
        raise ConfigError(
            f"output_dir: {path} is not empty and is not a robustft run folder: refusing to write into it; "
            f"choose another folder"
        )
    if saved.get("verb") != verb:
        raise ConfigError(
            f"output_dir: {path} holds a robustft {saved.get('verb')} run, not a {verb} run: refusing to write "
            f"into it; choose another folder"
        )
    return saved


def make_folder(path: Path) -> None:
    with os_errors(path, "create the run folder"):
        path.mkdir(parents=True, exist_ok=True)


def protect(path: Path) -> None:
    """Never clear /, the home folder, the working directory or one of its parents."""
    resolved = path.resolve()
    protected = {Path("/").resolve(), Path.home().resolve(), *Path.cwd().resolve().parents, Path.cwd().resolve()}
    if resolved in protected:
        raise ConfigError(
            f"output_dir: refusing to delete {path} ({resolved}): it is /, your home, the working directory or one "
            f"of its parents"
        )


def remove(entry: Path) -> None:
    """Delete one file or folder; a symbolic link is unlinked, never followed. A failure names `entry` (an OSError
    from shutil may carry no file name at all)."""
    try:
        if entry.is_symlink() or not entry.is_dir():
            entry.unlink()
        else:
            shutil.rmtree(entry)
    except OSError as exc:
        reason = exc.strerror or str(exc) or type(exc).__name__
        raise WriteError(
            f"cannot delete {exc.filename or entry}: {reason}; delete it yourself or choose another folder"
        ) from None


def user_files_within(entry: Path) -> list[Path]:
    """What robustft did not write in one of its folders (best/, trackers/, checkpoint/ and their .old/.tmp swap
    copies): a plain file under such a name (robustft writes them as folders only); in best/, a file not named like
    a saved model's (a subfolder, notes.txt); at the top of trackers/, a file (trackers write folders there)."""
    folder = entry.name.removesuffix(".old").removesuffix(".tmp")
    if folder not in OUR_FOLDERS or entry.is_symlink():  # a link is unlinked, never followed
        return []
    if not entry.is_dir():
        return [entry]
    if folder == "best":
        return [p for p in entry.iterdir() if p.is_dir() or not MODEL_FILE.fullmatch(p.name)]
    return [p for p in entry.iterdir() if not p.is_dir()] if folder == "trackers" else []


def clear_outputs(path: Path, keep_locks: set[str]) -> list[Path]:
    """Delete what robustft wrote into the run folder `path` (this process holds the locks in `keep_locks`), and
    only that: anything else stays and is named in a warning. Refused while another process holds any of the
    folder's locks. Returns what was kept."""
    protect(path)
    lock.refuse_if_others_hold(path, keep_locks)
    foreign = [f for entry in contents(path) if is_ours(entry.name) for f in user_files_within(entry)]
    if foreign:  # refused before anything is deleted: the user's files go nowhere
        names = ", ".join(str(f.relative_to(path)) for f in sorted(foreign)[:10])
        raise ConfigError(
            f"output_dir: {path} holds {len(foreign)} file(s) robustft did not write where --overwrite deletes: "
            f"{names}{' ...' if len(foreign) > 10 else ''}; move them out first"
        )
    kept = []
    for entry in sorted(contents(path)):
        if is_ours(entry.name):
            remove(entry)
        else:
            kept.append(entry)
    if kept:
        log.warning(
            "%s: deleted robustft's files of the old run; kept %d file(s) robustft did not write: %s",
            path,
            len(kept),
            ", ".join(p.name for p in kept[:10]) + (" ..." if len(kept) > 10 else ""),
        )
    return kept


def delete_run(path: Path, verb: str) -> None:
    """Delete robustft's files of the `verb` run in `path` (under its lock; never a foreign folder, ., ~ or /), and
    the folder itself when nothing else is left in it."""
    path = Path(path)
    saved = read_description(path)
    if saved is None or saved.get("verb") != verb:
        raise ConfigError(f"output_dir: refusing to delete {path}: it is not a robustft {verb} run")
    protect(path)
    handle = lock.take(path)
    try:
        kept = clear_outputs(path, keep_locks={LOCK})
        if not kept and not path.is_symlink():
            for lock_file in path.iterdir():
                if lock_file.is_file() and is_lock(lock_file.name):
                    lock_file.unlink()
            try:
                os.rmdir(path)
            except OSError:
                pass  # another process created something in it meanwhile: it stays, empty of our run
    finally:
        lock.release(handle)
