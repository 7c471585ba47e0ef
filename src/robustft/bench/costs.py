"""The bench's jobs described in the plain numbers bench/pricing prices: the examples each goes through (split
sizes from the task registry), its method's preset, the costs its objective declares (`default_steps`, `copies`)
and, for a partly run job, what it measured so far; and this machine's finished jobs, whose measured over expected
time calibrates the prices. Here the bench reads configs, objectives, data and run folders, so that pricing reads
none of them."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from robustft import runs, runtime
from robustft.bench import pricing
from robustft.bench.matrix import Job
from robustft.bench.pricing.rates import slowdown
from robustft.bench.pricing.work import Model, Work, seconds
from robustft.config import AttackConfig, TrainConfig
from robustft.data.tasks import split_size
from robustft.training.checkpoint import complete_checkpoints
from robustft.training.method import resolve_method


def size_of(task: str, split: str) -> int:
    try:
        return split_size(task, split)
    except Exception:  # a missing split is reported when the job runs; the price just leaves it out
        return 0


def resolved(cfg: TrainConfig) -> tuple[TrainConfig, type]:
    """A copy of a training config with its method's preset applied (e.g. RIFT's 20 release epochs), and the
    method's objective class, whose declared costs price it."""
    cfg = copy.deepcopy(cfg)
    return cfg, resolve_method(cfg).objective_class


def model_of(train_cfg: TrainConfig) -> Model:
    """The model a training config trains, with the ensemble copies its objective declares."""
    cfg, objective = resolved(train_cfg)
    copies = int(cfg.method_args.get("copies", objective.copies))
    return Model(cfg.method, str(cfg.model), cfg.arch, dict(cfg.im), copies)


def work_of(kind: str, cfg, train_cfg: TrainConfig | None = None) -> Work:
    """What a train, eval or attack job of `cfg` does (`train_cfg`: the model an eval or attack uses)."""
    if kind == "train":
        cfg, objective = resolved(cfg)
        n = cfg.n_train or (cfg.per_class and cfg.per_class * 3) or size_of(cfg.task, cfg.train_split)
        steps = cfg.method_args.get("steps") or objective.default_steps
        dev = cfg.n_dev or size_of(cfg.task, cfg.dev_split)
        fp32, length, grouped = cfg.wanted_precision == "fp32", cfg.max_length, cfg.group_by_length
        return Work(kind, cfg.task, n, model_of(cfg), cfg.epochs, dev, steps, length, grouped, fp32)
    n = min(cfg.n or 10**9, size_of(cfg.task, cfg.split))
    model = model_of(train_cfg) if train_cfg is not None else None
    if kind == "eval":
        return Work(kind, cfg.task, n, model, certify_samples=cfg.certify_samples if cfg.certify else 0)
    return Work(kind, cfg.task, n, model, fp32=cfg.precision == "fp32", recipe=cfg.recipe)


def finished_examples(folder: Path) -> list[dict]:
    """The finished records of an attack's per-example files (a shard's too), read without repairing anything: a
    torn last line may be one the running attack is still writing, and a damaged one only leaves the estimate."""
    return [r for path in sorted(folder.glob("examples*.jsonl")) for r in runs.read_records(path, strict=False)]


def measured_so_far(job: Job) -> tuple[float, float]:
    """(units done, their seconds) of a partly run training (its newest checkpoint) or attack (its finished
    examples); (0, 0) before it measured anything, or once it finished. Only read: it may be running elsewhere."""
    if job.kind not in ("train", "attack") or runs.is_finished(job.folder):
        return 0.0, 0.0
    if job.kind == "attack":
        records = finished_examples(job.folder)
        return len(records), sum(float(r.get("seconds") or 0.0) for r in records)
    newest = complete_checkpoints(job.folder / "checkpoint")[:1]
    loop = (runs.read_json(newest[0] / "state.json") or {}).get("loop", {}) if newest else {}
    done, spent = loop.get("examples", 0), loop.get("train_time_s", 0.0)
    return (done, spent) if spent > 0 else (0.0, 0.0)


def priced(job: Job, train_cfg: TrainConfig | None = None, progress: bool = True) -> pricing.Priced:
    """A job as pricing takes it (`train_cfg`: the model an eval or attack uses); with `progress`, what a partly
    run job measured so far, and the threads it ran with."""
    done, spent = measured_so_far(job) if progress else (0.0, 0.0)
    threads = ((runs.read_description(job.folder) or {}).get("config") or {}).get("threads") if done else None
    return pricing.Priced(work_of(job.kind, job.config, train_cfg), done, spent, threads)


def price_jobs(jobs: list[Job], all_jobs: list[Job], factors: pricing.Factors, progress: bool = True) -> list[float]:
    """Each job's expected seconds here (evaluations and attacks priced by the model they use, found among
    `all_jobs`); with `progress`, a partly run job's seconds left at its own rate."""
    trained = {j.id: j.config for j in all_jobs if j.kind == "train"}
    return pricing.price(pricing.Plan([priced(j, trained.get(j.cell), progress) for j in jobs], factors))


def expected_seconds(jobs: list[Job], all_jobs: list[Job]) -> list[float]:
    """Each job's price from the rates alone: no machine factor, no progress."""
    return price_jobs(jobs, all_jobs, {}, progress=False)


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


def machine_factors(bench_root: Path) -> pricing.Factors:
    """{kind: (measured / expected, jobs measured)} over this machine's finished trainings and attacks of any bench
    under `bench_root` (config.json `machine`), each priced as it ran (its threads: bench/pricing/rates.py)."""
    here, samples = runtime.machine(), []
    cells = sorted(Path(bench_root).glob("*/cells/*"))  # each a training's folder, its attacks' folders inside
    for folder in cells + [attack for cell in cells for attack in sorted(cell.glob("attack-*"))]:
        about = runs.read_description(folder) or {}
        if about.get("machine") != here or about.get("verb") not in pricing.CALIBRATED or not runs.is_finished(folder):
            continue
        try:
            if about["verb"] == "train":
                cfg, trained = TrainConfig(**about["config"]), None
            else:  # an attack's folder sits in the folder of the model it attacks
                cfg = AttackConfig(**about["config"])
                trained = TrainConfig(**runs.read_description(folder.parent)["config"])
        except (TypeError, KeyError):  # written by another version of the configs: leave it out
            continue
        expected = seconds(work_of(about["verb"], cfg, trained)) * slowdown(cfg.threads)
        samples.append((about["verb"], measured_seconds(folder), expected))
    return pricing.factors_from(samples)
