"""Finishing a save that a kill interrupted, in run folders robustft marked as its own, and only there.

A training swaps a new best model in through `best.tmp` and `best.old` (`atomic.swap_folder`); a kill between the
two renames leaves `best.old` and no `best`. Renaming in a folder that is not a robustft train run (a user's own
`best.old/`) would change the user's files, so the folder is validated first (our config.json), and a run that
another process holds is left to that process (it repairs its own on resume).
"""

from __future__ import annotations

import logging
from pathlib import Path

from robustft.atomic import recover_folder
from robustft.runs import lock
from robustft.runs.description import read_description
from robustft.runs.names import LOCK
from robustft.runs.run import Run

log = logging.getLogger("robustft.runs")

BEST = "best"


def interrupted(run_path: Path) -> bool:
    return not (run_path / BEST).exists() and (run_path / f"{BEST}.old").exists()


def repair_open_run(run: Run) -> None:
    """Finish the best model's interrupted swap in a run this process has opened (validated and locked)."""
    if interrupted(run.path):
        log.warning("%s: finishing the best model's save that a kill interrupted", run.path / BEST)
        recover_folder(run.path / BEST)


def repair_train_run(run_path: Path) -> bool:
    """Finish the best model's interrupted swap in `run_path` if it is a robustft train run that no process holds;
    whether it did."""
    run_path = Path(run_path)
    if not interrupted(run_path):
        return False
    saved = read_description(run_path)
    if saved is None or saved.get("verb") != "train":
        return False
    with lock.try_hold(run_path / LOCK) as mine:
        if not mine:
            return False
        if interrupted(run_path):  # again, under the lock
            log.warning("%s: finishing the best model's save that a kill interrupted", run_path / BEST)
            recover_folder(run_path / BEST)
    return True
