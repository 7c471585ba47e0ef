"""The results file (one JSONL line per finished setting, fsync'd; a line cut by a kill is measured again) and the
pick rule: a setting is picked when its solve converged and it damps both perturbations more than its own explicit
control, one per architecture."""

from __future__ import annotations

import json
import os
from pathlib import Path

from robustft.runs import read_records
from studies.im_screening.settings import CONVERGED, ex_of, key


def read(path: Path) -> list[dict]:
    """The finished settings; a line cut by a kill is left out (with a warning), so that setting is measured again."""
    return read_records(path, strict=False) if path.exists() else []


def append(path: Path, record: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    cut = path.exists() and path.stat().st_size > 0 and not path.read_bytes().endswith(b"\n")
    with path.open("a") as f:
        f.write(("\n" if cut else "") + json.dumps(record) + "\n")  # a line cut by a kill stays on its own
        f.flush()
        os.fsync(f.fileno())


def converged(record: dict) -> bool:
    layers = record["residual"].values()
    return bool(layers) and all(r["end"] <= CONVERGED and r["diverged"] == 0 for r in layers)


def damping_vs_ex(record: dict, done: dict) -> float | None:
    """Mean over swap and noise of last-layer distance IM / matched EX (< 1: damps more than its control)."""
    ex = done.get(key(ex_of(record["setting"])))
    if ex is None:
        return None
    return sum(record[p]["mean"][-1] / ex[p]["mean"][-1] for p in ("swap", "noise")) / 2


def damps_more(record: dict, done: dict) -> bool:
    ex = done.get(key(ex_of(record["setting"])))
    return ex is not None and all(record[p]["mean"][-1] < ex[p]["mean"][-1] for p in ("swap", "noise"))


def ranked(done: dict) -> list[dict]:
    """IM settings that converge and damp more than their matched EX on both perturbations, best first, one per
    architecture (form, dt, layers): of the solver settings of one architecture only the best counts."""
    good = [r for r in done.values() if r["setting"]["arch"] == "im" and converged(r) and damps_more(r, done)]
    best: dict[str, dict] = {}
    for r in sorted(good, key=lambda r: (damping_vs_ex(r, done), r["cost_x_plain"])):
        best.setdefault(key(ex_of(r["setting"])), r)
    return list(best.values())
