"""A run's log file: robustft's log records go to <run>/<name> (appended across resumes) and to the console."""

from __future__ import annotations

import logging
from pathlib import Path


def attach_log(path: Path, name: str) -> None:
    """Log robustft's records to <run>/<name> (appended across resumes) and to the console."""
    logger = logging.getLogger("robustft")
    logger.setLevel(logging.INFO)
    detach_log()
    file_handler = logging.FileHandler(Path(path) / name, encoding="utf-8")
    file_handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    file_handler._robustft_run = True
    logger.addHandler(file_handler)
    if not any(
        isinstance(h, logging.StreamHandler) and not isinstance(h, logging.FileHandler) for h in logger.handlers
    ):
        console = logging.StreamHandler()
        console.setFormatter(logging.Formatter("%(message)s"))
        logger.addHandler(console)


def detach_log() -> None:
    logger = logging.getLogger("robustft")
    for handler in list(logger.handlers):
        if getattr(handler, "_robustft_run", False):
            logger.removeHandler(handler)
            handler.close()
