"""Checkpoints that resume a run exactly: weights, optimizer, scheduler, RNG and loop position.

Tensors go to safetensors and everything else to JSON, so nothing is ever unpickled.

Layout: `<folder>/<seq>-step<step>/` holds one complete checkpoint; `<seq>` orders them. A checkpoint is
written into `<name>.tmp/`, every file fsync'd, then `manifest.json` (size and sha256 of each file) is
written last, the folder renamed into place and the parent fsync'd. Only then are checkpoints older than
the newest `keep` removed. So at every instant of a save (a kill between any two system calls) the newest
complete checkpoint is on disk, and resume finds it; one whose files do not match its manifest (truncated,
damaged) is skipped with a warning for the one before it.

Cost: one full write per checkpoint (no in-memory clone, no extra copy during the swap), plus one read
back to hash it. How often is `CheckpointSchedule`'s job: by steps, by wall-clock time, or both.
A multi-process run saves every rank's RNG state (dropout differs per rank), so each rank resumes exactly.
Beside them: the best model, swapped in whole (`save_best`), and the rules for going on (`resumed_precision`,
`out_of_patience`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import random
import re
import shutil
import time
from pathlib import Path

import numpy as np
import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from robustft.atomic import fsync_path, os_errors, recover_folder, swap_folder, write_file
from robustft.errors import RobustftError
from robustft.models.model_card import write_model_card
from robustft.resources import file_sha256

log = logging.getLogger(__name__)

FILES = ("weights.safetensors", "optimizer.safetensors", "rng.safetensors", "state.json")
MANIFEST = "manifest.json"
FORMAT = 2
NAME = re.compile(r"^(\d{6,})-step(\d+)$")
DEFAULT_KEEP = 2  # the newest and the one before it, to fall back to if the newest is damaged
DEFAULT_EVERY_S = 600.0  # a kill loses at most ~10 minutes of training


class CheckpointError(RobustftError):
    """No checkpoint in a run folder can be loaded; the message lists what was tried."""


class CheckpointSchedule:
    """When to write a mid-epoch checkpoint: every `every_steps` optimizer steps and/or every `every_s`
    seconds since the last save (0 turns a criterion off; both 0: only at epoch ends)."""

    def __init__(self, every_steps: int = 0, every_s: float = DEFAULT_EVERY_S, clock=time.monotonic):
        if every_steps < 0 or not every_s >= 0:
            raise ValueError(f"checkpoint intervals must be >= 0, got every_steps={every_steps} every_s={every_s}")
        self.every_steps, self.every_s, self.clock = every_steps, every_s, clock
        self.last = clock()

    def due(self, step: int) -> bool:
        by_steps = self.every_steps > 0 and step % self.every_steps == 0
        by_time = self.every_s > 0 and self.clock() - self.last >= self.every_s
        return by_steps or by_time

    def saved(self) -> None:
        self.last = self.clock()


# --- optimizer state as tensors + JSON -----------------------------------------------------------

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


# --- finding checkpoints -------------------------------------------------------------------------


def _numbered(folder: Path) -> list[Path]:
    """Format-2 checkpoints (with a manifest), newest first."""
    if not folder.is_dir():
        return []
    return sorted(
        (p for p in folder.iterdir() if p.is_dir() and NAME.match(p.name) and (p / MANIFEST).exists()),
        key=lambda p: int(NAME.match(p.name).group(1)),
        reverse=True,
    )


def _legacy(folder: Path) -> list[Path]:
    """Format-1 checkpoints: files straight in `folder`, swapped through `.tmp` and `.old` siblings. A kill
    between its two renames left only the siblings; `.tmp` got its state.json last, so with one it is
    complete and the newest."""
    candidates = (folder.with_name(folder.name + ".tmp"), folder, folder.with_name(folder.name + ".old"))
    return [p for p in candidates if (p / "state.json").exists()]


def complete_checkpoints(folder: Path) -> list[Path]:
    """Checkpoints to try, newest first; format-1 ones (from before the manifest) come last."""
    folder = Path(folder)
    return _numbered(folder) + _legacy(folder)


def has_checkpoint(folder: Path) -> bool:
    return bool(complete_checkpoints(folder))


def verify(checkpoint: Path) -> None:
    """Raise CheckpointError unless every file matches the manifest's size and sha256."""
    manifest_file = checkpoint / MANIFEST
    if not manifest_file.exists():
        return  # the layout before format 2 has no manifest: loading checks what it can
    try:
        manifest = json.loads(manifest_file.read_text(encoding="utf-8"))
        files = manifest["files"]
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as exc:
        raise CheckpointError(f"{manifest_file}: unreadable manifest ({exc})") from None
    for name, expected in files.items():
        path = checkpoint / name
        if not path.exists():
            raise CheckpointError(f"{path}: missing")
        size = path.stat().st_size
        if size != expected["bytes"]:
            raise CheckpointError(f"{path}: {size} bytes, the manifest says {expected['bytes']} (truncated?)")
        if file_sha256(path, cached=False) != expected["sha256"]:
            raise CheckpointError(f"{path}: content does not match its sha256 in the manifest (damaged)")


# --- save and load -------------------------------------------------------------------------------


def _next_name(folder: Path, step: int) -> str:
    numbers = [int(m.group(1)) for p in folder.iterdir() if (m := NAME.match(p.name.removesuffix(".tmp")))]
    return f"{max(numbers, default=0) + 1:06d}-step{step}"


def save_checkpoint(
    folder: Path,
    modules: dict[str, torch.nn.Module],
    optimizer,
    scheduler,
    loop_state: dict,
    keep: int = DEFAULT_KEEP,
    rng_states: list[dict] | None = None,
) -> Path:
    """Write a new complete checkpoint under `folder`, then drop all but the newest `keep`; returns it.

    A failure to write (disk full, read-only folder) raises WriteError naming the path; the previous
    checkpoints are untouched and the partial one is removed. `rng_states`: every rank's `rng_state()` in rank
    order (default: this process's alone).
    """
    if keep < 1:
        raise ValueError(f"keep must be >= 1, got {keep}")
    folder = Path(folder)
    with os_errors(folder, "create checkpoint folder"):
        folder.mkdir(parents=True, exist_ok=True)
    final = folder / _next_name(folder, int(loop_state.get("step", 0)))
    tmp = final.with_name(final.name + ".tmp")
    try:
        with os_errors(tmp, "write checkpoint"):
            tmp.mkdir()
            _write_files(tmp, modules, optimizer, scheduler, loop_state, rng_states or [rng_state()])
            fsync_path(tmp)
            tmp.rename(final)
            fsync_path(folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _prune(folder, keep)
    return final


def discard_checkpoints(folder: Path) -> int:
    """Remove a finished run's checkpoints (weights with optimizer state, about 3x the model each); returns the bytes
    freed. A finished run is reused, never resumed, and best/ holds its model, so they serve nothing more.
    The folder is first renamed aside (one atomic step), so a kill during the removal leaves no half-deleted
    `checkpoint/` behind, only a `checkpoint.old` that the next removal finishes. A failure only warns: the run
    itself is finished and whole."""
    folder = Path(folder)
    aside = folder.with_name(folder.name + ".old")
    freed = 0
    try:
        if folder.is_dir():
            shutil.rmtree(aside, ignore_errors=True)
            freed = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
            folder.rename(aside)
        shutil.rmtree(aside, ignore_errors=True)
    except OSError as exc:
        log.warning("could not remove the finished run's checkpoints in %s: %s", folder, exc.strerror or exc)
        return 0
    return freed


def _unshared(tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Tensors as safetensors accepts them, copying only those that share memory with an earlier one (tied
    weights): safetensors copies each tensor into its buffer anyway, so a clone of everything is waste."""
    seen: set[int] = set()
    out = {}
    for key, value in tensors.items():
        value = value.detach()
        storage = value.untyped_storage().data_ptr()
        out[key] = value.clone() if storage in seen else value.contiguous()
        seen.add(storage)
    return out


def rng_state() -> dict:
    """This process's random state: torch (CPU, and CUDA where there is one), Python and numpy."""
    py_state, np_state = random.getstate(), np.random.get_state()
    state = {
        "torch": torch.get_rng_state(),
        "python": [py_state[0], list(py_state[1]), py_state[2]],
        "numpy": [np_state[0], np_state[1].tolist(), *np_state[2:]],
    }
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


def _write_files(tmp: Path, modules, optimizer, scheduler, loop_state: dict, rng_states: list[dict]) -> None:
    weights = _unshared({f"{name}/{k}": v for name, module in modules.items() for k, v in module.state_dict().items()})
    opt_tensors, opt_meta = _optimizer_tensors(optimizer)
    meta = {
        "format": FORMAT,
        "optimizer": opt_meta,
        "scheduler": {k: v for k, v in scheduler.state_dict().items() if k != "lr_lambdas"},
        "python_rng": rng_states[0]["python"],
        "numpy_rng": rng_states[0]["numpy"],
        "loop": loop_state,
    }
    if len(rng_states) > 1:
        meta["rank_rng"] = {
            str(r): {"python": s["python"], "numpy": s["numpy"]} for r, s in enumerate(rng_states) if r > 0
        }
    rng_tensors = {
        f"{key}{_suffix(rank)}": state[key]
        for rank, state in enumerate(rng_states)
        for key in ("torch", "cuda")
        if key in state
    }
    try:
        save_file(weights, tmp / "weights.safetensors")
        save_file(opt_tensors, tmp / "optimizer.safetensors")
        save_file(rng_tensors, tmp / "rng.safetensors")
    except SafetensorError as exc:  # safetensors reports its I/O errors (ENOSPC, EROFS) this way
        raise OSError(str(exc)) from None
    write_file(tmp / "state.json", (json.dumps(meta, default=str) + "\n").encode("utf-8"))
    for name in FILES[:3]:
        fsync_path(tmp / name)
    files = {
        name: {"bytes": (tmp / name).stat().st_size, "sha256": file_sha256(tmp / name, cached=False)} for name in FILES
    }
    write_file(tmp / MANIFEST, (json.dumps({"format": FORMAT, "files": files}, indent=2) + "\n").encode("utf-8"))


def _prune(folder: Path, keep: int) -> None:
    """Remove all but the newest `keep` complete checkpoints, leftover partial ones and format-1 files."""
    for old in _numbered(folder)[keep:]:
        shutil.rmtree(old, ignore_errors=True)
    for partial in folder.glob("*.tmp"):
        shutil.rmtree(partial, ignore_errors=True)
    for legacy in _legacy(folder):  # superseded by the format-2 checkpoint just written
        if legacy == folder:
            for name in FILES:
                with contextlib.suppress(OSError):
                    (folder / name).unlink()
        else:
            shutil.rmtree(legacy, ignore_errors=True)


def _read(checkpoint: Path) -> tuple[dict, dict, dict, dict[str, torch.Tensor]]:
    """Everything in a checkpoint, checked, before anything is applied to the live objects."""
    verify(checkpoint)
    try:
        weights = load_file(checkpoint / "weights.safetensors")
        opt_tensors = load_file(checkpoint / "optimizer.safetensors")
        rng = load_file(checkpoint / "rng.safetensors")
        rng["torch"]  # noqa: B018 - every checkpoint has rank 0's torch state
        meta = json.loads((checkpoint / "state.json").read_text(encoding="utf-8"))
        for key in ("optimizer", "scheduler", "python_rng", "numpy_rng", "loop"):
            meta[key]  # noqa: B018 - a KeyError here means a damaged state.json
    except (OSError, SafetensorError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as exc:
        raise CheckpointError(f"{checkpoint}: unreadable ({type(exc).__name__}: {exc})") from None
    return weights, opt_tensors, meta, rng


def load_checkpoint(folder: Path, modules: dict[str, torch.nn.Module], optimizer, scheduler, rank: int = 0) -> dict:
    """Restore the newest checkpoint that loads, warning about any newer damaged one; returns the loop state.

    Raises CheckpointError if `folder` holds none that loads.
    """
    problems = []
    for checkpoint in complete_checkpoints(folder):
        try:
            weights, opt_tensors, meta, rng = _read(checkpoint)
        except CheckpointError as exc:
            log.warning("skipping damaged checkpoint: %s", exc)
            problems.append(str(exc))
            continue
        if problems:
            log.warning("resuming from the older checkpoint %s", checkpoint)
        for name, module in modules.items():
            prefix = f"{name}/"
            module.load_state_dict({k[len(prefix) :]: v for k, v in weights.items() if k.startswith(prefix)})
        _load_optimizer(optimizer, opt_tensors, meta["optimizer"])
        scheduler.load_state_dict({**scheduler.state_dict(), **meta["scheduler"]})
        restore_rng(meta, rng, rank)
        return meta["loop"]
    if problems:
        raise CheckpointError(f"no checkpoint in {folder} loads: {'; '.join(problems)}")
    raise CheckpointError(f"no complete checkpoint in {folder} (the first save was interrupted?)")


def restore_rng(meta: dict, tensors: dict[str, torch.Tensor], rank: int) -> None:
    saved = (
        {"python": meta["python_rng"], "numpy": meta["numpy_rng"]}
        if rank == 0
        else meta.get("rank_rng", {}).get(str(rank))
    )
    if saved is None or f"torch{_suffix(rank)}" not in tensors:
        log.warning(
            "the checkpoint has no random state for rank %d (saved with fewer processes): it keeps its seed, "
            "so dropout differs from the uninterrupted run",
            rank,
        )
        return
    set_rng_state(
        {**saved, **{k: tensors[f"{k}{_suffix(rank)}"] for k in ("torch", "cuda") if f"{k}{_suffix(rank)}" in tensors}}
    )


def resumed_precision(state: dict, here: str) -> str:
    """The precision a resumed run goes on in: the one it was trained in so far. Only 'auto' can differ (an explicit
    precision is in the config hash), and it resolves per machine (bf16 only on CPUs with native bf16), so a run
    moved to another machine would otherwise finish in another precision than it started in, and not resume exactly.
    Checkpoints written before the loop recorded its precision go on in `here`."""
    started = state.get("precision", here)
    if started != here:
        log.warning(
            "this run was trained in %s so far; 'auto' means %s on this machine: going on in %s so the resume is "
            "exact (--overwrite starts again in %s)",
            started,
            here,
            started,
            here,
        )
    return started


def out_of_patience(state: dict, patience: int | None) -> bool:
    """Early stopping: `patience` epochs have ended since the best dev accuracy."""
    best = state["best"]
    return patience is not None and best is not None and state["epoch"] - best["epoch"] >= patience


def checkpoint(group, folder: Path, modules, optimizer, scheduler, state: dict, keep: int) -> None:
    """Rank 0 writes the checkpoint, with every rank's RNG state (gathered) so that each resumes exactly."""
    rng = group.gather(rng_state())
    if group.world.main:
        save_checkpoint(folder, modules, optimizer, scheduler, state, keep=keep, rng_states=rng)


def save_best(model, tokenizer, folder: Path, card: dict) -> None:
    """`save_pretrained` (and the model card) into a temporary folder, then swap it in: the best model is never
    half-written."""
    recover_folder(folder)
    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    with os_errors(tmp, "save the best model to"):
        model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        write_model_card(tmp, card)
    swap_folder(tmp, folder)
