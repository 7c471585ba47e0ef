"""What a run folder's config.json says: the verb, its full config, a stable hash of the settings and inputs,
the code and library versions and the machine; and reading it back (is this folder one of ours, is it finished)."""

from __future__ import annotations

import dataclasses
import datetime
import json
import subprocess
import sys
from pathlib import Path

from robustft import runtime
from robustft.config import config_hash, hashed_settings
from robustft.runs.names import CONFIG, MARK, METRICS
from robustft.runs.records import read_json
from robustft.version import __version__


def code_version() -> dict:
    import torch
    import transformers

    commit = None
    try:
        commit = (
            subprocess.run(
                ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, cwd=Path(__file__).parent
            ).stdout.strip()
            or None
        )
    except (OSError, subprocess.SubprocessError):
        pass
    return {
        "robustft": __version__,
        "git_commit": commit,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "python": sys.version.split()[0],
    }


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def run_hash(cfg, inputs: dict[str, str]) -> str:
    return config_hash({"settings": hashed_settings(cfg), "inputs": dict(sorted(inputs.items()))})


def describe(cfg, inputs: dict[str, str], extra: dict | None = None) -> dict:
    """What config.json holds for `cfg` run on `inputs` (name -> sha256 of every file read)."""
    return {
        MARK: 1,
        "verb": cfg.verb,
        "config": dataclasses.asdict(cfg),
        "hash": run_hash(cfg, inputs),
        "inputs": dict(sorted(inputs.items())),
        "versions": code_version(),
        "machine": runtime.machine(),
        "created": now(),
        **(extra or {}),
    }


def resumed_description(saved: dict, today: dict) -> dict:
    """A resumed run keeps what it started with, noting the code and machine that go on with it."""
    return {**saved, "versions": today["versions"], "machine": today["machine"]}


def differences(saved: dict, new: dict) -> str:
    """'settings changed: a, b; inputs changed: f' between two descriptions."""
    if saved.get("hash") == new.get("hash"):
        return "same settings and inputs"
    old_cfg, new_cfg = saved.get("config", {}), new.get("config", {})
    settings = sorted(k for k in set(old_cfg) | set(new_cfg) if old_cfg.get(k) != new_cfg.get(k) and k != "shard")
    old_in, new_in = saved.get("inputs", {}), new.get("inputs", {})
    files = sorted(k for k in set(old_in) | set(new_in) if old_in.get(k) != new_in.get(k))
    parts = ([f"settings changed: {', '.join(settings)}"] if settings else []) + (
        [f"inputs changed: {', '.join(files)}"] if files else []
    )
    return "; ".join(parts) or "its hash differs (written by another robustft version)"


def read_description(path: Path) -> dict | None:
    """The config.json of a robustft run folder (None when there is none, or it is not robustft's)."""
    try:
        data = json.loads((Path(path) / CONFIG).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return None
    if not isinstance(data, dict):
        return None
    if MARK not in data:  # folders written before the mark: train runs had config+hash, attacks a recipe
        if "recipe" in data and "hash" in data:
            return {**data, "verb": "attack"}
        if isinstance(data.get("config"), dict) and "hash" in data:
            return {**data, "verb": "train"}
        return None
    return data


def read_metrics(path: Path) -> dict | None:
    return read_json(Path(path) / METRICS)


def is_finished(path: Path) -> bool:
    metrics = read_metrics(path)
    return bool(metrics and metrics.get("complete"))
