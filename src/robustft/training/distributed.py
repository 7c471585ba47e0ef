"""Multi-process training (DDP), switched on by the launcher's environment (torchrun, `accelerate launch`), not by a
flag or a second loop: `start` returns a `Solo` for one process and a `Group` under a launcher, with the same
methods, so the loop reads the same either way.

A `Group` initialises the process group (NCCL on CUDA, gloo on CPU), wraps the model in DistributedDataParallel
(attributes such as `config` or `base_model` still reach the Hugging Face model, calls go through DDP's forward),
averages the gradients of an objective's own trainable modules (RIFT's heads) that DDP does not see, sums loss values
across ranks and gathers objects (dev predictions, RNG states) for rank 0, the only writer.
"""

from __future__ import annotations

import datetime
from contextlib import nullcontext
from pathlib import Path

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from robustft import runs
from robustft.data.batching import encode, eval_batches
from robustft.errors import RobustftError
from robustft.models.predict import accuracy, accuracy_from_probs, class_probs
from robustft.runtime import World


class WrappedModel(DistributedDataParallel):
    """DDP that still answers the wrapped model's attributes, so objectives written for a Hugging Face model
    (`model.config`, `model.base_model`, `model.get_input_embeddings()`) run unchanged."""

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            if name == "module":
                raise
            return getattr(self.module, name)


class Solo:
    """One process: every collective is the identity."""

    world = World()

    def wrap(self, model):
        return model

    def no_sync(self, model, skip: bool):
        return nullcontext()

    def sum(self, value: float) -> float:
        return value

    def average_grads(self, params) -> None:
        pass

    def gather(self, obj) -> list:
        return [obj]

    def broadcast(self, obj):
        return obj

    def barrier(self) -> None:
        pass

    def close(self) -> None:
        pass


class Group(Solo):
    """The processes of one launch."""

    def __init__(self, world: World, device: torch.device, timeout_s: float = 1800):
        self.world, self.device = world, device
        self.owns = not dist.is_initialized()
        if device.type == "cuda":
            torch.cuda.set_device(device)
        if self.owns:  # MASTER_ADDR / MASTER_PORT / RANK / WORLD_SIZE come from the launcher (env://)
            dist.init_process_group(
                "nccl" if device.type == "cuda" else "gloo",
                rank=world.rank,
                world_size=world.size,
                timeout=datetime.timedelta(seconds=timeout_s),
            )

    def wrap(self, model):
        # Encoders keep no running statistics (no BatchNorm), so their buffers (position ids) never change: no
        # broadcast of them before each of the many forwards an adversary makes per step.
        return WrappedModel(
            model, device_ids=[self.device.index] if self.device.type == "cuda" else None, broadcast_buffers=False
        )

    def no_sync(self, model, skip: bool):
        """Gradient accumulation: no all-reduce until the last micro-batch of an optimizer step."""
        return model.no_sync() if skip else nullcontext()

    def sum(self, value: float) -> float:
        tensor = torch.tensor([value], dtype=torch.float64, device=self._comm_device())
        dist.all_reduce(tensor)
        return tensor.item()

    def average_grads(self, params) -> None:
        """Average gradients DDP does not sync (an objective's own modules). A parameter no rank gave a gradient
        keeps none, as in one process (the optimizer skips it); one that some ranks left unset counts zero there."""
        params = list(params)
        if not params:
            return
        has = torch.tensor([float(p.grad is not None) for p in params], device=self._comm_device())
        dist.all_reduce(has)
        for p, count in zip(params, has.tolist(), strict=True):
            if count == 0:
                continue
            if p.grad is None:
                p.grad = torch.zeros_like(p)
            dist.all_reduce(p.grad)
            p.grad.div_(self.world.size)

    def gather(self, obj) -> list:
        out = [None] * self.world.size
        dist.all_gather_object(out, obj)
        return out

    def broadcast(self, obj):
        box = [obj]
        dist.broadcast_object_list(box, src=0)
        return box[0]

    def barrier(self) -> None:
        dist.barrier()

    def close(self) -> None:
        if self.owns and dist.is_initialized():
            dist.destroy_process_group()

    def _comm_device(self) -> torch.device:
        return self.device if self.device.type == "cuda" else torch.device("cpu")


def start(world: World, device: torch.device) -> Solo:
    return Group(world, device) if world.distributed else Solo()


def dev_accuracy(group: Solo, model, tokenizer, examples, max_length: int, batch_size: int, precision: str) -> dict:
    """Dev accuracy and loss with the prediction batches split across ranks and gathered. Each rank scores whole
    batches of one process's batching (same padding, same arithmetic), so every rank gets one process's numbers."""
    batching = {"max_length": max_length, "batch_size": batch_size, "precision": precision}
    if not group.world.distributed:
        return accuracy(model, tokenizer, examples, **batching)
    batches = eval_batches(encode(tokenizer, examples, max_length), batch_size)
    mine = sorted(i for b in batches[group.world.rank :: group.world.size] for i in b)
    probs = class_probs(model, tokenizer, [examples[i] for i in mine], **batching).tolist() if mine else []
    full = torch.empty(len(examples), model.config.num_labels)
    for positions, part in group.gather((mine, probs)):  # float32 -> Python float -> float32 is exact
        if positions:
            full[positions] = torch.tensor(part, dtype=full.dtype)
    return accuracy_from_probs(full, [e.label for e in examples])


def open_on_main(group: Solo, path: Path, cfg, inputs: dict, **kwargs) -> runs.Run:
    """Rank 0 opens (checks, creates, locks) the run folder; the other ranks get its description, or its refusal."""
    run, error = None, None
    if group.world.main:
        try:
            run = runs.open_run(path, cfg, inputs, **kwargs)
        except Exception as exc:  # every rank must stop, not only the one that saw it
            error = exc
    mine = None
    if group.world.main:
        mine = ("error", str(error)) if error is not None else ("ok", run.finished, run.description)
    shared = group.broadcast(mine)
    if error is not None:
        raise error
    if shared[0] == "error":
        raise RobustftError(f"rank 0 could not open the run folder: {shared[1]}")
    return run or runs.Run(Path(path), cfg.verb, shared[2], finished=shared[1])
