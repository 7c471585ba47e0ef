"""Shared benchmark plumbing: environment facts next to every number, JSON saved atomically, and the floor:
the raw model time of the same inputs, so every benchmark can say how far above the hardware it runs.

This machine is shared: every benchmark times the recipe and its floor in the same process, interleaved,
and records the 1-minute load average before and after (`load_average`), so ratios compare and absolute
seconds are read with the load next to them.
"""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path

import torch

RESULTS = Path(__file__).parent / "results"


def load_average() -> float:
    return round(os.getloadavg()[0], 2)


def environment() -> dict:
    return {
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "cpu_count": os.cpu_count(),
        "machine": platform.machine(),
        "cuda": torch.cuda.is_available(),
        "load_average_1m": load_average(),
    }


def save(name: str, data: dict) -> Path:
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"environment": environment(), **data}, indent=2) + "\n")
    os.replace(tmp, path)
    print(f"saved {path}")
    return path


def load_sst2_victim(ref: str):
    """The SST-2 classifier a benchmark attacks, in eval mode: a run folder, model folder or alias. An alias such as
    minilm gets a freshly initialised head, seeded so that it is the same head in every run."""
    from robustft.data.tasks import get_task
    from robustft.models.factory import load_classifier
    from robustft.runs import resolve

    torch.manual_seed(0)
    model, tok = load_classifier(resolve(ref).model, label_names=get_task("sst2").label_names)
    return model.eval(), tok


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def forward_seconds(model, batches: list[dict], precision: str) -> float:
    """Seconds to run `model` (no_grad, eval) on already-tokenised batches under `precision`'s autocast:
    the forward floor of whatever produced those batches (no tokenisation, no Python around it)."""
    from robustft import runtime
    from robustft.data.batching import model_inputs

    device = runtime.model_device(model)
    moved = [runtime.to_device(model_inputs(b), device) for b in batches]
    was_training = model.training
    model.eval()
    sync(device)
    start = time.perf_counter()
    with torch.no_grad(), runtime.autocast(device, precision):
        for b in moved:
            model(**b)
    sync(device)
    model.train(was_training)
    return time.perf_counter() - start


def length_grouped(
    tokenizer,
    pairs: list[tuple[str, str | None]],
    batch_size: int,
    max_length: int,
    pad_to_multiple_of: int | None = None,
) -> list[dict]:
    """The ideal batching of a set of inputs: sorted by token length, `batch_size` per batch, each padded
    to its longest row (the issue's floor: length-grouped batches, never padded to the model maximum)."""
    from robustft.data.batching import tokenize_pad

    is_pair = any(b is not None for _, b in pairs)
    lengths = tokenizer(
        [a for a, _ in pairs], [b for _, b in pairs] if is_pair else None, truncation=True, max_length=max_length
    )["input_ids"]
    order = sorted(range(len(pairs)), key=lambda i: len(lengths[i]))
    out = []
    for s in range(0, len(order), batch_size):
        chunk = [pairs[i] for i in order[s : s + batch_size]]
        extra = {"pad_to_multiple_of": pad_to_multiple_of} if pad_to_multiple_of else {}
        out.append(
            tokenize_pad(
                tokenizer,
                [a for a, _ in chunk],
                [b for _, b in chunk] if is_pair else None,
                max_length=max_length,
                **extra,
            )
        )
    return out
