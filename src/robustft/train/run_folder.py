"""The run folder's description: config.json with a stable hash and the versions of code and data."""

from __future__ import annotations

import dataclasses
import json
import logging
import subprocess
import sys
from pathlib import Path

from robustft import __version__, resources
from robustft.atomic import atomic_write_json
from robustft.config import config_hash
from robustft.data.tasks import get_task
from robustft.errors import ConfigError


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


def data_versions(task_name: str, splits: list[str]) -> dict:
    """sha256 of every data file the run reads, so a result names its inputs."""
    task = get_task(task_name)
    out = {}
    for split in splits:
        for rel in task.splits[split].files:
            if resources.has_data(rel):
                path = resources.data_root() / rel
                out[rel] = resources.file_sha256(str(path)) if path.is_file() else "folder"
            else:
                out[rel] = "hub"
    return out


def describe_run(cfg, run_dir: Path, resume: bool) -> dict:
    """Write config.json (or check it on resume: a resumed run must have the same hash)."""
    description = {
        "config": dataclasses.asdict(cfg),
        "hash": config_hash(cfg),
        "versions": code_version(),
        "data": data_versions(cfg.task, [cfg.train_split, cfg.dev_split]),
    }
    path = run_dir / "config.json"
    if resume and path.exists():
        saved = json.loads(path.read_text(encoding="utf-8"))
        if saved["hash"] != description["hash"]:
            raise ConfigError(
                f"cannot resume {run_dir}: its config hash {saved['hash'][:12]} differs from this "
                f"config's {description['hash'][:12]}; resume with the same settings"
            )
        return saved
    atomic_write_json(path, description)
    return description


def init_logging(run_dir: Path) -> None:
    """Log to <run>/train.log (appended across resumes) and to the console."""
    logger = logging.getLogger("robustft")
    logger.setLevel(logging.INFO)
    for handler in list(logger.handlers):
        if getattr(handler, "_robustft_run", False):
            logger.removeHandler(handler)
            handler.close()
    fmt = logging.Formatter("%(asctime)s %(levelname)s %(message)s")
    file_handler = logging.FileHandler(run_dir / "train.log", encoding="utf-8")
    file_handler.setFormatter(fmt)
    file_handler._robustft_run = True
    logger.addHandler(file_handler)
    if not any(
        isinstance(h, logging.StreamHandler) and not isinstance(h, logging.FileHandler) for h in logger.handlers
    ):
        console = logging.StreamHandler()
        console.setFormatter(logging.Formatter("%(message)s"))
        logger.addHandler(console)
