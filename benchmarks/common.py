"""Shared benchmark plumbing: environment facts next to every number, JSON saved atomically."""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path

import torch

RESULTS = Path(__file__).parent / "results"


def environment() -> dict:
    return {"torch": torch.__version__, "threads": torch.get_num_threads(), "cpu_count": os.cpu_count(),
            "machine": platform.machine(), "cuda": torch.cuda.is_available(),
            "load_average_1m": os.getloadavg()[0]}


def save(name: str, data: dict) -> Path:
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"environment": environment(), **data}, indent=2) + "\n")
    os.replace(tmp, path)
    print(f"saved {path}")
    return path
