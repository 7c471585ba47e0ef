"""Experiment trackers through accelerate's tracker classes: `--tracker tensorboard` (or any tracker accelerate
supports and finds installed: wandb, mlflow, aim, comet_ml, ...). Off by default. Rank 0 alone makes one; it gets
the run's config as hyper-parameters, the loop's log lines (train/*) and each epoch's dev results (dev/*). Event
files go to <run>/trackers/<run name>/ for the trackers that write locally."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from robustft.errors import ConfigError


def open_tracker(cfg, run_dir: Path):
    if not cfg.tracker:
        return None
    from accelerate.tracking import LOGGER_TYPE_TO_CLASS, get_available_trackers

    name = str(cfg.tracker).lower()
    if name not in LOGGER_TYPE_TO_CLASS:
        known = ", ".join(sorted(LOGGER_TYPE_TO_CLASS))
        raise ConfigError(f"tracker: unknown '{cfg.tracker}'; accelerate knows {known}")
    if name not in {str(t) for t in get_available_trackers()}:
        hint = "pip install 'robustft[tensorboard]'" if name == "tensorboard" else f"install {name}"
        raise ConfigError(f"tracker: '{name}' is not installed here ({hint})")
    from accelerate.state import PartialState

    PartialState()  # accelerate's trackers log through it; under a launcher it joins the process group already made
    cls = LOGGER_TYPE_TO_CLASS[name]
    run_name = Path(run_dir).name
    tracker = cls(run_name, str(Path(run_dir) / "trackers")) if cls.requires_logging_directory else cls(run_name)
    tracker.main_process_only = False  # only rank 0 makes one, so accelerate's own process state is not needed
    tracker.start()
    tracker.store_init_configuration(hyperparameters(cfg))
    return tracker


def hyperparameters(cfg) -> dict:
    """The config as flat scalars (groups and lists as JSON text), which every tracker accepts."""
    return {
        k: v if v is None or isinstance(v, bool | int | float | str) else json.dumps(v, sort_keys=True)
        for k, v in dataclasses.asdict(cfg).items()
    }


def log(tracker, values: dict, step: int, prefix: str) -> None:
    if tracker is not None:
        tracker.log({f"{prefix}/{k}": float(v) for k, v in values.items()}, step=step)


def finish(tracker) -> None:
    if tracker is not None:
        tracker.finish()
