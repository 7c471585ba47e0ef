"""Model references: a training run folder means its best model and its training config; the rest passes through."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from robustft.errors import ConfigError
from robustft.runs.description import read_description
from robustft.runs.names import CONFIG
from robustft.runs.repair import BEST, repair_train_run


@dataclass
class Resolved:
    """A model reference with, when it came from a training run folder, that run's config."""

    model: str
    train_config: dict | None = None
    run_path: Path | None = None
    train_inputs: dict | None = None  # the run's inputs: 'data:<absolute path>' names its data file


def resolve(path: str | Path) -> Resolved:
    """A run folder means its best/ model and its training config; a model folder inside a run (…/best) finds its
    run too; anything else is a model reference (alias, folder, hub name). A folder is repaired (an interrupted
    save of best/ finished) only once it is known to be a robustft train run."""
    candidate = Path(path)
    runs = [candidate] + ([candidate.parent] if candidate.name == BEST else [])
    for run in runs:
        saved = read_description(run)
        if saved is None or saved.get("verb") != "train":
            continue
        repair_train_run(run)
        if (run / BEST / CONFIG).exists():
            return Resolved(str(run / BEST), saved["config"], run, saved.get("inputs"))
    return Resolved(str(path))


def inherit(cfg, resolved: Resolved, defaults: dict):
    """`cfg` with its unset (None) keys taken from the training run, else from `defaults`; and what was taken."""
    inherited, train = {}, resolved.train_config or {}
    for key, default in defaults.items():
        if getattr(cfg, key) is None:
            value = train.get(key, default)
            if key == "precision" and value is None:
                value = "bf16" if train.get("bf16", True) else "fp32"  # runs written before `precision`
            setattr(cfg, key, value)
            inherited[key] = {"value": value, "from": "training run" if key in train else "default"}
    if inherited:  # a value read from a run folder is checked as one the user typed (a tampered max_length -5)
        try:
            cfg.validate()
        except ConfigError as exc:
            raise ConfigError(f"{Path(resolved.run_path or resolved.model) / CONFIG}: inherited {exc}") from None
    return cfg, inherited


def model_run_record(resolved: Resolved) -> dict | None:
    if resolved.run_path is None:
        return None
    return {"path": str(resolved.run_path), "config": resolved.train_config}


def default_output(resolved: Resolved, *parts) -> Path:
    name = "-".join(str(p) for p in parts if p not in (None, ""))
    if resolved.run_path is not None:
        return resolved.run_path / name
    return Path("runs") / f"{Path(resolved.model.rstrip('/')).name or 'model'}-{name}"
