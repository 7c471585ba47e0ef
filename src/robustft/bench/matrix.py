"""A bench config expanded into its jobs: one training run per (method, task, size, seed) cell, then that model's
evaluations and attacks. Every job is a run folder under <bench>/cells/<cell>/ with a stable id to list, filter
and run one at a time."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from robustft import verbs
from robustft.attacks.recipes import recipe_config
from robustft.config import AttackConfig, BenchConfig, EvalConfig, TrainConfig, apply_overrides
from robustft.errors import ConfigError
from robustft.evaluation.certify import DEFINITIONS as CERTIFIED_DEFENSES
from robustft.training.objectives import check_method_args

ADVGLUE_SPLITS = {
    "sst2": ["advglue-sst2"],
    "qqp": ["advglue-qqp"],
    "qnli": ["advglue-qnli"],
    "rte": ["advglue-rte"],
    "mnli": ["advglue-mnli", "advglue-mnli-mm"],
}


@dataclass
class Job:
    id: str  # e.g. "bert/sst2/n1000/s0", "bert/sst2/n1000/s0 eval advglue-sst2/dev"
    kind: str  # train | eval | attack
    config: Any  # the verb's config, output_dir set
    cell: str  # the id of the training job whose model it uses
    method: str
    task: str

    @property
    def folder(self) -> Path:
        return Path(self.config.output_dir)


def bench_dir(cfg: BenchConfig) -> Path:
    return Path(cfg.output_dir or Path("runs") / "bench" / cfg.name)


def size_settings(size) -> tuple[str, dict]:
    """A size entry -> (its tag in ids, the train keys it sets)."""
    if size is None:
        return "all", {}
    if isinstance(size, int):
        return f"n{size}", {"n_train": size}
    if isinstance(size, str) and size.startswith("kshot"):
        return size, {"train_split": f"{size}-train", "dev_split": f"{size}-dev"}
    if size == "subset":
        return "subset", {"train_split": "subset-train"}
    raise ConfigError(f"sizes: '{size}' is not null, a number, 'subset' or 'kshotS'")


def fill(value, task: str):
    """'{task}' in any string of a (nested) setting becomes the cell's task."""
    if isinstance(value, str):
        return value.replace("{task}", task)
    if isinstance(value, dict):
        return {k: fill(v, task) for k, v in value.items()}
    if isinstance(value, list):
        return [fill(v, task) for v in value]
    return value


def shared(cfg: BenchConfig) -> dict:
    return {"precision": cfg.precision, "device": cfg.device, "threads": cfg.threads, "progress": cfg.progress}


def measuring(cfg: BenchConfig) -> dict:
    """The settings of a cell's evaluations and attacks: `shared`, at `eval_precision` when one is set."""
    return {**shared(cfg), "precision": cfg.eval_precision or cfg.precision}


def train_job(cfg: BenchConfig, label: str, spec: dict, task: str, size, seed: int) -> Job:
    tag, sized = size_settings(size)
    cell = f"{label}/{task}/{tag}/s{seed}"
    folder = bench_dir(cfg) / "cells" / cell.replace("/", "-")
    values = {
        "model": cfg.model,
        "task": task,
        "seed": seed,
        **shared(cfg),
        **copy.deepcopy(cfg.train),
        **sized,
        **fill(copy.deepcopy(spec), task),
        "output_dir": str(folder),
        "label": label,
    }
    explicit: set[str] = set()
    train = apply_overrides(TrainConfig(), values, source=f"bench cell {cell}", explicit=explicit)
    train.explicit_keys = explicit  # a method's published preset fills only what the bench leaves unset
    check_method_args(train.method, train.method_args)  # each cell's settings, before any job starts
    return Job(cell, "train", verbs.check(train), cell, label, task)


def checked_attack(attack: AttackConfig) -> AttackConfig:
    recipe_config(attack.recipe, attack.protocol, attack.recipe_args)
    return attack.validate()


def certify_settings(spec: dict, trained: Job) -> dict | None:
    """The EvalConfig keys of a `certify: true` evaluation ({} without one); None where the cell's method has no
    certificate (only SAFER and RanMASK have one), so such an evaluation runs where it is defined and nowhere else."""
    if not spec.get("certify"):
        return {}
    if trained.config.method not in CERTIFIED_DEFENSES:
        return None
    keys = ("certify", "certify_samples", "certify_alpha")
    return {k: spec[k] for k in keys if k in spec}


def eval_jobs(cfg: BenchConfig, trained: Job) -> list[Job]:
    jobs = []
    for spec in cfg.evals:
        spec = dict(spec)
        certify = certify_settings(spec, trained)
        if certify is None:
            continue
        advglue = spec.pop("advglue", False)
        names = ADVGLUE_SPLITS.get(trained.task, []) if advglue else [fill(spec.pop("task", "{task}"), trained.task)]
        for name in names:
            split = spec.get("split", "dev")
            n = spec.get("n")
            tags = ([f"n{n}"] if n else []) + (["certify"] if certify else [])
            folder = trained.folder / "-".join(["eval", name, split, *tags])
            where = {"model": str(trained.folder), "output_dir": str(folder), "seed": spec.get("seed", 0)}
            ev = EvalConfig(task=name, split=split, n=n, **where, **certify, **measuring(cfg)).validate()
            job_id = f"{trained.id} eval {name}/{split}" + "".join(f"/{t}" for t in tags)
            jobs.append(Job(job_id, "eval", ev, trained.id, trained.method, trained.task))
    return jobs


def attack_jobs(cfg: BenchConfig, trained: Job) -> list[Job]:
    jobs = []
    for spec in cfg.attacks:
        spec = fill(dict(spec), trained.task)
        task = spec.pop("task", trained.task)
        values = {"model": str(trained.folder), "task": task, **measuring(cfg), **spec}
        attack = apply_overrides(AttackConfig(), values, source=f"bench attack {spec}")
        name = "-".join(
            str(p)
            for p in ["attack", attack.recipe, attack.protocol, task, attack.split, f"n{attack.n}", f"s{attack.seed}"]
            if p
        )
        attack.output_dir = str(trained.folder / name)
        # protocol and a non-zero sample seed only when set, so the ids of earlier benches stay as they were
        job_id = (
            f"{trained.id} attack {attack.recipe}{f'-{attack.protocol}' if attack.protocol else ''}"
            f"/{task}/{attack.split}/n{attack.n}{f'/s{attack.seed}' if attack.seed else ''}"
        )
        jobs.append(Job(job_id, "attack", checked_attack(attack), trained.id, trained.method, trained.task))
    return jobs


def expand(cfg: BenchConfig) -> list[Job]:
    """Every job of the bench, each training job followed by the jobs that use its model; one seed of every task,
    size and method before the next seed, so an interrupted bench has whole replicates (a five-task AdvGLUE score,
    a full low-resource curve) to report."""
    if not cfg.methods:
        raise ConfigError("methods: a bench needs at least one method (label: {arch, method, ...})")
    if cfg.baseline not in cfg.methods:
        raise ConfigError(f"baseline: '{cfg.baseline}' is not one of the methods {', '.join(cfg.methods)}")
    overridden = sorted({"output_dir", "label"} & set(cfg.train))  # train_job sets both per cell, after cfg.train
    if overridden:
        raise ConfigError(f"train.{overridden[0]}: a bench sets it per cell (<output_dir>/cells/<cell>); leave it out")
    jobs = []
    for seed in cfg.seeds:
        for task in cfg.tasks:
            for size in cfg.sizes:
                for label, spec in cfg.methods.items():
                    trained = train_job(cfg, label, spec or {}, task, size, seed)
                    jobs += [trained, *eval_jobs(cfg, trained), *attack_jobs(cfg, trained)]
    ids = [j.id for j in jobs]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise ConfigError(
            f"two jobs of this bench have the same id ({repeated[0]}): give every method a distinct label and every "
            "evaluation or attack distinct settings"
        )
    return jobs
