"""What a Ctrl-C'd training says, on its own line and in train.log: the checkpoint it keeps, the disk the run folder
takes meanwhile (checkpoints hold the optimiser's state: 260-870 MB for MiniLM to MPNet), and the command that
continues it."""

from __future__ import annotations

import dataclasses
import json
import logging
import shlex
import sys
from pathlib import Path

from robustft.training.checkpoint import complete_checkpoints

log = logging.getLogger("robustft.train")


def report_interrupt(cfg, run_path: Path) -> None:
    if cfg.progress:
        sys.stderr.write("\n")  # a progress bar leaves its line open: the message gets its own
    newest = complete_checkpoints(run_path / "checkpoint")[:1]
    kept = f"kept the checkpoint {newest[0]}" if newest else "no checkpoint yet (resuming starts from the beginning)"
    size = sum(f.stat().st_size for f in run_path.rglob("*") if f.is_file() and not f.is_symlink())
    log.warning(
        "interrupted: %s; %s takes %.0f MB on disk until the run is resumed (or deleted); continue with: %s",
        kept,
        run_path,
        size / 1e6,
        resume_command(cfg),
    )


def resume_command(cfg) -> str:
    """`robustft train` with every setting that differs from its default, and --resume: the same config, so the
    same run folder and hash."""
    words = ["robustft", "train"]
    for field in dataclasses.fields(cfg):
        default = field.default_factory() if field.default_factory is not dataclasses.MISSING else field.default
        value = getattr(cfg, field.name)
        if field.name == "explicit_keys" or value == default:
            continue
        items = value.items() if isinstance(value, dict) else [(None, value)]
        for key, item in items:
            words += [f"--{field.name}" + (f".{key}" if key is not None else ""), command_value(item)]
    return shlex.join(words) + " --resume"


def command_value(value) -> str:
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "none"}[value]
    return json.dumps(value) if isinstance(value, list | dict) else str(value)
