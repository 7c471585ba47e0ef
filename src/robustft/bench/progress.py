"""What a partly run bench job has left, priced at its own measured rate instead of the estimate.

The measured rates bench/pricing.py prices jobs with are an order of magnitude; a job that has run is its own best
measurement. IM + RIFT's SST-2 cell (configs/rift-1000.yaml, 2026-12-05) was estimated with its evaluations and
attacks at 189 minutes; its training alone measured 3-4 minutes a step for 180 steps on one thread. A training's
newest checkpoint holds its examples and compute seconds so far; an attack's examples.jsonl holds each finished
example's seconds. Only read here: the job may be running in another process.
"""

from __future__ import annotations

from pathlib import Path

from robustft import runs
from robustft.bench.calibrate import slowdown
from robustft.bench.pricing import examples_of, train_size, with_preset
from robustft.training.checkpoint import complete_checkpoints


def threads_it_ran_with(folder: Path) -> int | None:
    about = runs.read_description(folder) or {}
    return (about.get("config") or {}).get("threads")


def training_left(job) -> float | None:
    """Seconds of training left at the rate of its newest checkpoint (dev evaluations, seconds an epoch, left out;
    all its epochs counted, as patience may not stop it), or None before its first checkpoint."""
    newest = complete_checkpoints(job.folder / "checkpoint")[:1]
    loop = (runs.read_json(newest[0] / "state.json") or {}).get("loop", {}) if newest else {}
    done, spent = loop.get("examples", 0), loop.get("train_time_s", 0.0)
    if done <= 0 or spent <= 0:
        return None
    cfg = with_preset(job.config)
    return spent / done * max(0, cfg.epochs * train_size(cfg) - done)


def finished_examples(folder: Path) -> list[dict]:
    """The finished records of an attack's per-example files (a shard's too), read without repairing anything: a
    torn last line may be one the running attack is still writing, and a damaged one only leaves the estimate."""
    return [r for path in sorted(folder.glob("examples*.jsonl")) for r in runs.read_records(path, strict=False)]


def attack_left(job) -> float | None:
    """Seconds of an attack left at its mean seconds per finished example, or None before its first example."""
    records = finished_examples(job.folder)
    if not records:
        return None
    mean = sum(float(r.get("seconds") or 0.0) for r in records) / len(records)
    return mean * max(0, examples_of(job.config) - len(records))


def seconds_left(job) -> float | None:
    """A partly run training's or attack's seconds left as one process on every core (the unit of the estimate),
    or None where nothing of it was measured yet."""
    if job.kind not in ("train", "attack") or runs.is_finished(job.folder):
        return None
    left = training_left(job) if job.kind == "train" else attack_left(job)
    return None if left is None else left / slowdown(threads_it_ran_with(job.folder))
