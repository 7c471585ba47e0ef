"""The estimate scaled to the machine that runs it: its rates (bench/pricing.py; the machine its rates file names)
were measured on one 2-core CPU with native bf16, and another machine can be several times slower (an AVX2-only AMD
EPYC, training MiniLM in fp32, took 24.8 min for the 1,000-example SST-2 BERT of configs/im-lowresource-1000.yaml
against 7.2 expected for its one-thread worker: 3.5x), so a deadline trusting them starts trainings that the
session's end then cuts off.

Per kind (train, attack), the factor is the measured time over the expected time of every finished job of any bench
under the same root that recorded this machine (config.json `machine`), each expected time priced as it ran: a job of
a bench with one-thread workers on a 2-core CPU takes workers / 1.7 times the one-process estimate.
"""

from __future__ import annotations

import json
from pathlib import Path

from robustft import runtime
from robustft.bench.pricing import seconds
from robustft.config import AttackConfig, TrainConfig
from robustft.runs import is_finished, read_description

# Two one-thread workers get through about 1.7x the work of one two-thread process, so each of their jobs takes about
# workers / 1.7 times the estimate (which is for one process on 2 cores). Measured on this project's 2-core machine
# in whole studies: im-exact-minilm's 60 jobs took 254.7 min of their own time in two workers against 245.7 priced
# (1.9x, with other work beside them part of the time), mpnet-study's first trainings 7.1 min against 6.1 (1.7x);
# a 2026-12-01 benchmark of an older runner had 1.2x (docs/performance.md, "Bench workers").
WORKERS_SPEEDUP = 1.7
CALIBRATED = ("train", "attack")  # evaluations take seconds: not worth a factor


def measured_seconds(folder: Path) -> float:
    """A finished job's own compute time, summed over the sessions it ran in: training's accumulated time, or an
    attack's per-example seconds (its summary's mean over every record; evaluations record none, they take
    seconds)."""
    metrics = json.loads((Path(folder) / "metrics.json").read_text(encoding="utf-8"))
    if "train_time_s" in metrics:
        return float(metrics["train_time_s"])
    if metrics.get("avg_seconds_per_example") is not None:
        return metrics["avg_seconds_per_example"] * (metrics["num_examples"] + metrics["num_errors"])
    return 0.0


def slowdown(threads: int | None) -> float:
    """How much longer than the one-process estimate a job with `threads` CPU threads takes on this machine."""
    return max(1.0, runtime.cpu_cores() / threads / WORKERS_SPEEDUP) if threads else 1.0


def machine_factors(bench_root: Path) -> dict[str, tuple[float, int]]:
    """{kind: (measured / expected, jobs measured)} over this machine's finished jobs under `bench_root`; a kind
    without any is left out (the estimate stands as it is)."""
    here = runtime.machine()
    sums = {kind: [0.0, 0.0, 0] for kind in CALIBRATED}
    cells = sorted(Path(bench_root).glob("*/cells/*"))  # each a training's folder, its attacks' folders inside
    for folder in cells + [attack for cell in cells for attack in sorted(cell.glob("attack-*"))]:
        about = read_description(folder) or {}
        if about.get("machine") != here or about.get("verb") not in sums or not is_finished(folder):
            continue
        try:
            if about["verb"] == "train":
                cfg, trained = TrainConfig(**about["config"]), None
            else:  # an attack's folder sits in the folder of the model it attacks
                cfg, trained = AttackConfig(**about["config"]), TrainConfig(**read_description(folder.parent)["config"])
        except (TypeError, KeyError):  # written by another version of the configs: leave it out
            continue
        expected = seconds(about["verb"], cfg, trained) * slowdown(cfg.threads)
        if expected > 0:
            entry = sums[about["verb"]]
            entry[0], entry[1], entry[2] = entry[0] + measured_seconds(folder), entry[1] + expected, entry[2] + 1
    return {kind: (measured / expected, n) for kind, (measured, expected, n) in sums.items() if n}


def describe_factors(factors: dict[str, tuple[float, int]]) -> str:
    """'trainings x3.5 (3 finished here), attacks x0.9 (5 finished here)' or that nothing is calibrated yet."""
    if not factors:
        return "not calibrated to this machine yet (no job of any bench here finished on it)"
    names = {"train": "trainings", "attack": "attacks"}
    parts = [f"{names[kind]} x{factor:.1f} ({n} finished here)" for kind, (factor, n) in factors.items()]
    return "scaled to this machine from its finished jobs: " + ", ".join(parts)
