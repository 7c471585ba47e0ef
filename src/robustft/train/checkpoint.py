"""Checkpoints that resume a run exactly: weights, optimizer, scheduler, RNG and loop position.

Tensors go to safetensors and everything else to JSON, so nothing is ever unpickled. Each checkpoint is
written to a temporary folder and renamed into place: a run killed mid-write keeps its last good one.
A multi-process run saves every rank's RNG state (dropout differs per rank), so each rank resumes exactly.
"""

from __future__ import annotations

import json
import logging
import os
import random
import shutil
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file, save_file

from robustft.atomic import atomic_write_json

log = logging.getLogger("robustft.train")


def _optimizer_tensors(optimizer) -> tuple[dict[str, torch.Tensor], dict]:
    state = optimizer.state_dict()
    tensors, scalars = {}, {}
    for pid, values in state["state"].items():
        for key, value in values.items():
            if torch.is_tensor(value):
                tensors[f"{pid}.{key}"] = value.contiguous()
            else:
                scalars[f"{pid}.{key}"] = value
    return tensors, {"param_groups": state["param_groups"], "scalars": scalars}


def _load_optimizer(optimizer, tensors: dict[str, torch.Tensor], meta: dict) -> None:
    state: dict[int, dict] = {}
    for name, value in tensors.items():
        pid, key = name.split(".", 1)
        state.setdefault(int(pid), {})[key] = value
    for name, value in meta["scalars"].items():
        pid, key = name.split(".", 1)
        state.setdefault(int(pid), {})[key] = value
    optimizer.load_state_dict({"state": state, "param_groups": meta["param_groups"]})


def rng_state() -> dict:
    """This process's random state: torch (CPU, and CUDA where there is one), Python and numpy."""
    py_state, np_state = random.getstate(), np.random.get_state()
    state = {"torch": torch.get_rng_state(), "python": [py_state[0], list(py_state[1]), py_state[2]],
             "numpy": [np_state[0], np_state[1].tolist(), *np_state[2:]]}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state()
    return state


def set_rng_state(state: dict) -> None:
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state(state["cuda"])
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    np_name, np_keys, *np_rest = state["numpy"]
    np.random.set_state((np_name, np.array(np_keys, dtype=np.uint32), *np_rest))


def _suffix(rank: int) -> str:
    return "" if rank == 0 else f".rank{rank}"


def save_checkpoint(folder: Path, modules: dict[str, torch.nn.Module], optimizer, scheduler, loop_state: dict,
                    rng_states: list[dict] | None = None) -> None:
    """`rng_states`: every rank's `rng_state()` (rank order); default this process's alone."""
    rng_states = rng_states or [rng_state()]
    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    weights = {
        f"{name}/{k}": v.detach().contiguous().clone()
        for name, module in modules.items()
        for k, v in module.state_dict().items()
    }
    save_file(weights, tmp / "weights.safetensors")
    opt_tensors, opt_meta = _optimizer_tensors(optimizer)
    save_file(opt_tensors, tmp / "optimizer.safetensors")
    save_file({f"{key}{_suffix(rank)}": state[key] for rank, state in enumerate(rng_states)
               for key in ("torch", "cuda") if key in state}, tmp / "rng.safetensors")
    meta = {
        "optimizer": opt_meta,
        "scheduler": {k: v for k, v in scheduler.state_dict().items() if k != "lr_lambdas"},
        "python_rng": rng_states[0]["python"],
        "numpy_rng": rng_states[0]["numpy"],
        "loop": loop_state,
    }
    if len(rng_states) > 1:
        meta["rank_rng"] = {str(r): {"python": s["python"], "numpy": s["numpy"]} for r, s in enumerate(rng_states)
                            if r > 0}
    atomic_write_json(tmp / "state.json", meta)
    old = folder.with_name(folder.name + ".old")
    if folder.exists():
        os.replace(folder, old)
    os.replace(tmp, folder)
    shutil.rmtree(old, ignore_errors=True)


def load_checkpoint(folder: Path, modules: dict[str, torch.nn.Module], optimizer, scheduler, rank: int = 0) -> dict:
    weights = load_file(folder / "weights.safetensors")
    for name, module in modules.items():
        prefix = f"{name}/"
        module.load_state_dict({k[len(prefix) :]: v for k, v in weights.items() if k.startswith(prefix)})
    meta = json.loads((folder / "state.json").read_text(encoding="utf-8"))
    _load_optimizer(optimizer, load_file(folder / "optimizer.safetensors"), meta["optimizer"])
    scheduler.load_state_dict({**scheduler.state_dict(), **meta["scheduler"]})
    tensors = load_file(folder / "rng.safetensors")
    saved = {"python": meta["python_rng"], "numpy": meta["numpy_rng"]} if rank == 0 else meta.get(
        "rank_rng", {}).get(str(rank))
    if saved is None or f"torch{_suffix(rank)}" not in tensors:
        log.warning("the checkpoint has no random state for rank %d (saved with fewer processes): it keeps its seed, "
                    "so dropout differs from the uninterrupted run", rank)
    else:
        set_rng_state({**saved, **{k: tensors[f"{k}{_suffix(rank)}"] for k in ("torch", "cuda")
                                   if f"{k}{_suffix(rank)}" in tensors}})
    return meta["loop"]
