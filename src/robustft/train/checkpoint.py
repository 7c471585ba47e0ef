"""Checkpoints that resume a run exactly: weights, optimizer, scheduler, RNG and loop position.

Tensors go to safetensors and everything else to JSON, so nothing is ever unpickled. Each checkpoint is
written to a temporary folder and renamed into place: a run killed mid-write keeps its last good one.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file, save_file

from robustft.atomic import atomic_write_json


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


def save_checkpoint(folder: Path, modules: dict[str, torch.nn.Module], optimizer, scheduler, loop_state: dict) -> None:
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
    save_file({"torch": torch.get_rng_state()}, tmp / "rng.safetensors")
    py_state = random.getstate()
    np_state = np.random.get_state()
    meta = {
        "optimizer": opt_meta,
        "scheduler": {k: v for k, v in scheduler.state_dict().items() if k != "lr_lambdas"},
        "python_rng": [py_state[0], list(py_state[1]), py_state[2]],
        "numpy_rng": [np_state[0], np_state[1].tolist(), *np_state[2:]],
        "loop": loop_state,
    }
    atomic_write_json(tmp / "state.json", meta)
    old = folder.with_name(folder.name + ".old")
    if folder.exists():
        os.replace(folder, old)
    os.replace(tmp, folder)
    shutil.rmtree(old, ignore_errors=True)


def load_checkpoint(folder: Path, modules: dict[str, torch.nn.Module], optimizer, scheduler) -> dict:
    weights = load_file(folder / "weights.safetensors")
    for name, module in modules.items():
        prefix = f"{name}/"
        module.load_state_dict({k[len(prefix) :]: v for k, v in weights.items() if k.startswith(prefix)})
    meta = json.loads((folder / "state.json").read_text(encoding="utf-8"))
    _load_optimizer(optimizer, load_file(folder / "optimizer.safetensors"), meta["optimizer"])
    scheduler.load_state_dict({**scheduler.state_dict(), **meta["scheduler"]})
    torch.set_rng_state(load_file(folder / "rng.safetensors")["torch"])
    version, internal, gauss = meta["python_rng"]
    random.setstate((version, tuple(internal), gauss))
    np_name, np_keys, *np_rest = meta["numpy_rng"]
    np.random.set_state((np_name, np.array(np_keys, dtype=np.uint32), *np_rest))
    return meta["loop"]
