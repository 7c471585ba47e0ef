"""The bench's two loop rates measured on this machine (a GPU's, say), from short runs of the real loop, and each
training cell of a bench priced with them by the library's pricing (robustft.bench.pricing).

    python benchmarks/job_rates.py rift --only '*/imdb/*' --steps 40 --name job_rates_imdb_gpu
    python benchmarks/job_rates.py quick --write_rates rates-here.json    # then ROBUSTFT_BENCH_RATES=rates-here.json

For each selected training cell: its own TrainConfig (preset, batch, length, precision, device, IM setting) trains
`--steps` optimizer steps of one epoch through `robustft.training.loop.train` (the loop's examples/s counts optimizer
work only), then the trained model scores `--eval_n` examples of the cell's dev split through `class_probs`, what
every dev pass and evaluation job calls (its examples/s). Each measured rate is turned into the rate of the unit the
rates file prices in (a standard step on short texts, a plain forward) by dividing out what pricing charges for the
cell (its method, ascent steps, IM solves, text length, padding, precision); the cell and its evaluation jobs are then
priced with those rates, exactly as `robustft bench --list` prices them. Attacks are not timed here (their cost per
example depends on how robust the trained model is). Before the first cell, one warm-up cell run (CUDA context,
kernels) is not reported. On CUDA the peak memory of each cell's training is saved too.

`--write_rates PATH` writes a rates file for this machine: the shipped one (robustft/assets/bench_rates.json) with
its machine and its two loop rates replaced by the median over the timed cells (each saying how it was measured); a
bench prices with it where ROBUSTFT_BENCH_RATES names it. `--model PATH` replaces every cell's model, e.g. a folder
holding the backbone's config and tokenizer with freshly initialised weights where the real weights cannot travel:
a step's arithmetic, and so its time, does not depend on the weights' values (the accuracy of such runs means
nothing and is not saved).
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import datetime
import json
import statistics
import tempfile
import time
from pathlib import Path

import torch

from common import load_average, save, sync
from robustft import runs, runtime
from robustft.atomic import atomic_write_json
from robustft.bench import pricing
from robustft.bench.costs import resolved, work_of
from robustft.bench.plan import plan
from robustft.bench.presets import bench_config
from robustft.bench.pricing.rates import read_rates
from robustft.bench.pricing.work import forward_cost, step_seconds
from robustft.config import explicit_keys
from robustft.data.tasks import load_examples
from robustft.models.factory import load_classifier
from robustft.models.predict import class_probs
from robustft.training.loop import train


def with_keys(cfg, **values):
    """A copy of `cfg` with `values` set as the user's choice (so no preset overrides them)."""
    cfg = copy.deepcopy(cfg)
    chosen = explicit_keys(cfg)
    for key, value in values.items():
        setattr(cfg, key, value)
    cfg.explicit_keys = sorted(chosen | set(values))
    return cfg


def short_train(cfg, batch_size: int, steps: int, out: Path, model: str | None) -> dict:
    """Metrics of `steps` optimizer steps of `cfg`'s loop (one epoch of steps x `batch_size` examples); `cfg` stays
    as the user wrote it so the loop applies its preset once, as in the bench."""
    keys = {"n_train": steps * batch_size, "n_dev": 64, "epochs": 1, "output_dir": str(out), "progress": False}
    device = runtime.pick_device(cfg.device)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()  # the current device: a bare "cuda" device is refused
    run = train(with_keys(cfg, **keys, **({"model": model} if model else {})), progress=False)
    metrics = json.loads((run / "metrics.json").read_text())
    if device.type == "cuda":
        metrics["peak_memory_mib"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
    return metrics


def eval_rate(train_cfg, run: Path, n: int) -> float:
    """Examples per second of the evaluation verb's scoring (`class_probs`, as every eval and dev pass calls it) on
    `n` examples of the cell's dev split, with the run's model; one warm-up pass first."""
    model, tokenizer = load_classifier(runs.resolve(str(run)).model)
    device = runtime.pick_device(train_cfg.device)
    model.to(device)
    examples = load_examples(train_cfg.task, train_cfg.dev_split, n=n, seed=0)
    score = dict(max_length=train_cfg.max_length, batch_size=train_cfg.eval_batch_size, precision=train_cfg.precision)
    class_probs(model, tokenizer, examples[:64], **score)
    sync(device)
    start = time.perf_counter()
    class_probs(model, tokenizer, examples, **score)
    sync(device)
    return len(examples) / (time.perf_counter() - start)


def unit_rates(work, train_rate: float, scoring_rate: float, shipped: pricing.Rates) -> tuple[float, float]:
    """The measured rates of a cell (`work`: its training, as pricing takes it) in the units of the rates file:
    standard short-text training examples/s, and plain short-text forwards/s."""
    train_unit = train_rate * step_seconds(work, shipped) * shipped.train_examples_per_s
    return train_unit, scoring_rate * forward_cost(work, shipped)


def cell_row(job, evals: list, args, out: Path, shipped: pricing.Rates) -> dict:
    full, work = resolved(job.config)[0], work_of("train", job.config)
    metrics = short_train(job.config, full.batch_size, args.steps, out / "train", args.model)
    scoring = eval_rate(full, out / "train", args.eval_n)
    train_unit, eval_unit = unit_rates(work, metrics["train_examples_per_s"], scoring, shipped)
    here = dataclasses.replace(shipped, train_examples_per_s=train_unit, eval_examples_per_s=eval_unit)
    seconds = pricing.seconds(work, here)
    seconds += sum(pricing.seconds(work_of("eval", e.config, job.config), here) for e in evals)
    return {
        "job": job.id,
        "method": full.method,
        "arch": full.arch,
        "batch_size": full.batch_size,
        "max_length": full.max_length,
        "group_by_length": full.group_by_length,
        "steps_timed": metrics["steps"],
        "train_examples_per_s": metrics["train_examples_per_s"],
        "device": metrics["device"],
        "precision": metrics["precision"],
        "peak_memory_mib": metrics.get("peak_memory_mib"),
        "eval_examples_per_s": round(scoring, 1),
        "unit_rates": {"train_examples_per_s": round(train_unit, 1), "eval_examples_per_s": round(eval_unit, 1)},
        "full_cell": {
            "epochs": full.epochs,
            "n_train": work.examples,
            "eval_n": sum(work_of("eval", e.config).examples for e in evals),
        },
        "expected_hours": round(seconds / 3600, 2),
    }


def write_rates(path: Path, rows: list[dict], args) -> None:
    """The shipped rates file with this machine and its two loop rates (medians over `rows`) in it."""
    rates = json.loads(pricing.RATES_FILE.read_text(encoding="utf-8"))
    how = f"benchmarks/job_rates.py {args.bench} --only '{args.only or '*'}'" + (" --model" if args.model else "")
    sources = {
        "train": f"{how}: the median over {len(rows)} cells' loops ({args.steps} optimizer steps each), in standard "
        "short-text steps (each cell's price divided out)",
        "eval": f"{how}: the median over {len(rows)} cells' models scoring {args.eval_n} dev examples, in plain "
        "short-text forwards (each model's forward cost divided out)",
    }
    rates["machine"] = runtime.machine()
    for group, source in sources.items():
        value = statistics.median(r["unit_rates"][f"{group}_examples_per_s"] for r in rows)
        rates[group]["examples_per_s"] = {
            "value": round(value, 1),
            "measured": datetime.date.today().isoformat(),
            "source": source,
        }
    atomic_write_json(path, rates)
    print(f"wrote {path}: a bench prices with it where ROBUSTFT_BENCH_RATES={path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("bench", help="a preset name or a bench config file")
    parser.add_argument("--only", help="job id glob, as robustft bench --only")
    parser.add_argument("--skip", nargs="*", default=[], help="job id globs to leave out")
    parser.add_argument("--steps", type=int, default=40, help="optimizer steps timed per cell")
    parser.add_argument("--eval_n", type=int, default=1000, help="dev examples the evaluation rate is timed on")
    parser.add_argument("--model", help="replace every cell's model (see above)")
    parser.add_argument("--name", default="job_rates", help="results/<name>.json")
    parser.add_argument("--write_rates", type=Path, help="write a rates file for this machine (see above)")
    args = parser.parse_args()

    jobs = plan(bench_config(args.bench), args.only, args.skip).chosen
    cells = [j for j in jobs if j.kind == "train"]
    shipped = read_rates(pricing.RATES_FILE)
    load_before = load_average()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        warm = cells[0].config
        short_train(warm, resolved(warm)[0].batch_size, 5, Path(tmp) / "warm-up", args.model)
        for i, job in enumerate(cells):
            evals = [j for j in jobs if j.kind == "eval" and j.cell == job.id]
            rows.append(cell_row(job, evals, args, Path(tmp) / f"cell{i}", shipped))
            print(json.dumps(rows[-1]), flush=True)
    save(
        args.name,
        {
            "bench": args.bench,
            "only": args.only,
            "skip": args.skip,
            "steps": args.steps,
            "model": args.model or "each cell's own",
            "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
            "load_average_before": load_before,
            "load_average_after": load_average(),
            "cells": rows,
            "expected_hours_total": round(sum(r["expected_hours"] for r in rows), 1),
        },
    )
    if args.write_rates:
        write_rates(args.write_rates, rows, args)


if __name__ == "__main__":
    main()
