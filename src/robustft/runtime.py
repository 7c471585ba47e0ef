"""Device, precision, CPU threads, moving batches and this process's place among several: the one place every
model call asks.

Every verb (train, eval, attack, probe, bench) and every model wrapper (victim, masked LM, sentence
encoder, white-box attack) takes its device from `pick_device`, its autocast from `autocast`, and moves
inputs with `to_device(batch, model_device(model))`, so an input can never be on another device than
the model that reads it. `world()` reads the launcher's environment (torchrun, accelerate launch), as
nanoGPT does: no flag switches multi-process runs on.
"""

from __future__ import annotations

import contextvars
import functools
import os
import platform
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any

import torch

from robustft.config import PRECISIONS
from robustft.errors import ConfigError

DEVICE_HELP = "auto (cuda if available, else cpu), cpu, cuda, cuda:1, mps"


def pick_device(name: str | torch.device | None = "auto") -> torch.device:
    """The device of `name`; 'auto' and a bare 'cuda' mean this process's GPU (cuda:LOCAL_RANK under a launcher)."""
    if isinstance(name, torch.device):
        return name
    if name in (None, "", "auto"):
        name = "cuda" if torch.cuda.is_available() else "cpu"
    try:
        device = torch.device(name)
    except RuntimeError:
        raise ConfigError(f"device: unknown device '{name}'; use {DEVICE_HELP}") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError(f"device: '{name}' asked for, but CUDA is not available on this machine")
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", local_rank() % torch.cuda.device_count())
    return device


@dataclass(frozen=True)
class World:
    """This process among the processes of one launch: rank 0 of 1 when no launcher started it."""

    rank: int = 0
    size: int = 1
    local_rank: int = 0

    @property
    def distributed(self) -> bool:
        return self.size > 1

    @property
    def main(self) -> bool:
        return self.rank == 0


_ALONE = contextvars.ContextVar("robustft_alone", default=False)


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    try:
        return default if value in (None, "") else int(value)
    except ValueError:
        raise ConfigError(f"environment: {name}={value!r} is not an integer (set by torchrun / accelerate)") from None


def local_rank() -> int:
    """The launcher's LOCAL_RANK (the GPU of this process on its node), 0 without a launcher."""
    return _env_int("LOCAL_RANK", 0)


def world() -> World:
    """RANK / WORLD_SIZE / LOCAL_RANK as torchrun and `accelerate launch` set them (one process when unset, or
    inside `alone()`)."""
    if _ALONE.get():
        return World()
    size, rank = _env_int("WORLD_SIZE", 1), _env_int("RANK", 0)
    if size < 1 or not 0 <= rank < size:
        raise ConfigError(f"environment: RANK={rank} is not within WORLD_SIZE={size}")
    return World(rank, size, local_rank())


@contextmanager
def alone():
    """Inside, `world()` is one process even under a launcher: a bench gives whole jobs to ranks, and each job then
    runs as one process (on this rank's GPU: `pick_device` still reads LOCAL_RANK)."""
    token = _ALONE.set(True)
    try:
        yield
    finally:
        _ALONE.reset(token)


def resolve_precision(precision: str, device: torch.device) -> str:
    """The concrete precision ('bf16', 'fp16' or 'fp32') that `precision` means on `device`."""
    if precision not in PRECISIONS:
        raise ConfigError(f"precision: expected one of {', '.join(PRECISIONS)}, got '{precision}'")
    if precision != "auto":
        return precision
    if device.type == "cuda":
        return "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    if device.type == "cpu":
        return "bf16" if cpu_has_native_bf16() else "fp32"
    return "fp32"


@functools.cache  # the hardware does not change, and the victim resolves its precision on every forward
def cpu_has_native_bf16() -> bool:
    """Whether this CPU runs bf16 matmuls in hardware (AVX512-BF16 or AMX). There bf16 was measured faster than fp32
    for MiniLM (benchmarks/results); without it oneDNN emulates bf16: on an AVX2-only CPU a MiniLM training step
    ran 8-12x slower in bf16 than in fp32 (benchmarks/results/train_throughput_avx2_no_bf16.json), so 'auto' means fp32
    there."""
    return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())


def launcher_precision(precision: str) -> str:
    """'auto' follows `accelerate launch --mixed_precision bf16|fp16` (ACCELERATE_MIXED_PRECISION) when one was
    given; an explicit precision always wins, and accelerate's default 'no' leaves 'auto' as it is."""
    chosen = os.environ.get("ACCELERATE_MIXED_PRECISION", "")
    return chosen if precision == "auto" and chosen in ("bf16", "fp16") else precision


def autocast(device: torch.device, precision: str):
    """The autocast context of a concrete or 'auto' precision (fp32: no autocast)."""
    precision = resolve_precision(precision, device)
    if precision == "fp32":
        return nullcontext()
    dtype = torch.bfloat16 if precision == "bf16" else torch.float16
    return torch.autocast(device_type=device.type, dtype=dtype)


def model_device(model: torch.nn.Module) -> torch.device:
    """Where a model's parameters live (its inputs must go there)."""
    for p in model.parameters():
        return p.device
    return torch.device("cpu")


def to_device(batch: dict[str, Any], device: torch.device) -> dict[str, Any]:
    """Tensors of a batch moved to `device`; anything else (raw examples) passed through."""
    return {k: v.to(device) if torch.is_tensor(v) else v for k, v in batch.items()}


# What one more model call costs on the CPU, in padded token-rows: a batch's rows are split by length where their
# padding would cost more than a call (data.batching.padded_cost_batches). Fitted as a + b * rows to the warm
# per-row times of the precision probe (MiniLM, mean length ~34 tokens, quiet;
# benchmarks/results/attack_precision_threads_quiet.json): a / (b / 34) is 30 (fp32) and 42 (bf16) token-rows on one
# thread, 83 and 150 on two; one value between them, as the split is flat near its optimum. On CUDA unmeasured (no
# GPU was lent): rows are chunked as before, never split for padding.
CPU_CALL_OVERHEAD_TOKENS = 64


def call_overhead_tokens(device: torch.device) -> float:
    return CPU_CALL_OVERHEAD_TOKENS if device.type == "cpu" else float("inf")


# Below this many rows a bf16 forward on the CPU runs faster on one thread than on several: oneDNN's set-up for a
# new shape and the threads' hand-offs outweigh the split work. Quiet machine, MiniLM, 2 cores, first calls at new
# lengths (benchmarks/results/attack_precision_threads_quiet.json), ms per row, 1 / 2 threads: 1 row 15.4-15.7 /
# 18.5-23.1, 4 rows 7.4-7.6 / 8.0-8.9, 8 rows 5.7-6.2 / 5.3-5.4. fp32 gains from the second thread at every size.
BF16_ONE_THREAD_BELOW_ROWS = 8


@contextmanager
def threads_for_forward(rows: int, device: torch.device, precision: str, below: int = BF16_ONE_THREAD_BELOW_ROWS):
    """One torch thread for a small bf16 CPU forward (see above); otherwise the process's threads, untouched."""
    threads = torch.get_num_threads()
    if device.type != "cpu" or threads == 1 or rows >= below or resolve_precision(precision, device) != "bf16":
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def quiet_libraries() -> None:
    """transformers' load reports and shard bars drown our own progress; keep its warnings and errors."""
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()


def cpu_cores() -> int:
    """The CPU cores this process may run on (its affinity, which containers and taskset narrow)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@functools.cache
def machine() -> dict:
    """What a run ran on, recorded in its config.json: trained weights and speed depend on it (the same seed gives
    other weights on another CPU, and emulated bf16 trains 8-12x slower than native), so runs from different machines
    must be told apart."""
    return {
        "cpu": cpu_model(),
        "arch": platform.machine(),
        "cores": cpu_cores(),
        "native_bf16": cpu_has_native_bf16(),
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
    }


def cpu_model() -> str:
    """The CPU's model name (Linux's /proc/cpuinfo; elsewhere what `platform` knows)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def describe_machine(about: dict) -> str:
    """One line for reports: '<cpu model> (x86_64), 2 CPU cores, no native bf16, no GPU'."""
    bf16 = "native bf16" if about["native_bf16"] else "no native bf16"
    gpu = f"GPU {about['gpu']}" if about["gpu"] else "no GPU"
    return f"{about['cpu']} ({about['arch']}), {about['cores']} CPU cores, {bf16}, {gpu}"


def set_threads(threads: int | None) -> None:
    """Torch CPU threads for this process (None: leave torch's default)."""
    if threads is not None:
        if threads < 1:
            raise ConfigError(f"threads: must be at least 1, got {threads}")
        torch.set_num_threads(threads)
