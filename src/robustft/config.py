"""One config system for every verb: a dataclass per verb, built by one loader from defaults, YAML/JSON files and
`--key value` overrides, validated where it is built (range and finiteness, one message naming the key), hashed.

Dotted keys reach into dict-valued fields: `--im.K=3` sets `cfg.im["K"] = 3`, `--method_args.beta=5` sets
`cfg.method_args["beta"] = 5`. A command-line value is read as the type its key declares: a string key keeps the
text as typed (`--output_dir '~'`, `--label yes`, `--task 1e3` stay strings), a number key takes a number, a bool
key true/false/yes/no/on/off/1/0. Only list- and dict-valued keys, the values of dotted keys and config files are
read as YAML (3 -> int, 1e-5 -> float, true -> bool). The settings of a group whose keys a higher layer declares
(`im`, `method_args`) are checked by that layer's registered check (`register_group_check`) when the config is
validated, so a bad `--im.eta` or `--method_args.beta` stops before any work.
One spelling, snake_case (`--max_length`); the old hyphenated and renamed flags still work with a warning.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import hashlib
import json
import math
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import yaml

from robustft.errors import ConfigError

PRECISIONS = ("auto", "bf16", "fp16", "fp32")
SHARD_HELP = "i/n: only slice i of n (0-based), merged when all n are done (default under torchrun: RANK/WORLD_SIZE)"
TRACKERS_HELP = "log to an accelerate tracker (tensorboard, wandb, mlflow, ...); off by default"
EVALUATION_ONLY_TASKS = ("advglue-", "textfooler-")
# numpy's and torch's seeds must lie in [0, 2**32): a larger one is an error deep inside a run
MAX_SEED = 2**32 - 1
# More threads than this only oversubscribe the cores; 1e9 made libgomp abort with an out-of-memory message
MAX_THREADS = 4 * (os.cpu_count() or 1)
# Any other whole-number key: counts, sizes and steps beyond this are typing mistakes, and larger ints overflow
# the C integers of torch and the tokenizers (an OverflowError traceback instead of a message)
MAX_COUNT = 2**31 - 1


def setting(default=None, help: str = "", *, min=None, max=None, choices=None, factory=None):
    """A config field with its help text and the range the loader enforces."""
    meta = {"help": help, "min": min, "max": max, "choices": choices}
    if factory is not None:
        return field(default_factory=factory, metadata=meta)
    return field(default=default, metadata=meta)


def tracks_explicit(cls):
    """Record in `explicit_keys` the keys a Python caller chose: given to the constructor (`TrainConfig(epochs=3)`)
    or assigned later (`cfg.lr = 5e-5`, with RunSettings.__setattr__), so that a method's preset never replaces
    them, even where they equal the defaults. `copy_config` keeps them through a copy (dataclasses.replace passes
    every key to the constructor, so every key would look chosen)."""
    init = cls.__init__
    names = [f.name for f in dataclasses.fields(cls) if f.init]

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        kwargs.pop("explicit_keys", None)  # `cls(**cfg.__dict__)` copies a config: every key it passes is chosen
        init(self, *args, **kwargs)
        self.explicit_keys = set(names[: len(args)]) | set(kwargs)

    cls.__init__ = __init__
    return cls


@dataclass
class RunSettings:
    """Keys every verb has: where the run goes and how it computes."""

    # Keys that say where or how fast things run, not what is computed: left out of the hash.
    not_hashed: ClassVar[frozenset[str]] = frozenset({"output_dir", "device", "threads", "progress"})
    # Keys added after runs were made, with the value that means "as before": left out of the hash while they
    # hold it, so a finished run of an older version keeps its hash and is reused.
    hash_neutral: ClassVar[dict[str, Any]] = {}
    verb: ClassVar[str] = ""

    device: str = setting("auto", "auto, cpu, cuda, cuda:1, mps")
    threads: int | None = setting(None, "torch CPU threads (at most 4 x the CPU cores)", min=1, max=MAX_THREADS)
    progress: bool = setting(True, "progress bars")

    def validate(self):
        validate(self)
        return self

    def __setattr__(self, name, value):
        object.__setattr__(self, name, value)
        chosen = self.__dict__.get("explicit_keys")  # absent while the constructor sets the defaults
        if chosen is not None and name in self.__dataclass_fields__:
            chosen.add(name)


@dataclass
class DataSettings:
    """A user's own data instead of a registered task: a file or a Hugging Face dataset, made into a task (named
    '<file stem>-<sha256[:8]>', so a changed file is a new run) by the data layer when the config is validated."""

    data: str | None = setting(
        None, "your own CSV, TSV or JSONL file instead of --task (train/dev: a seeded 90/10 split, test: every row)"
    )
    dataset: str | None = setting(None, "a Hugging Face dataset (name or local folder) instead of --task")
    dataset_config: str | None = setting(None, "the dataset's configuration (--dataset glue --dataset_config sst2)")
    data_columns: dict[str, Any] = setting(
        help="columns of --data/--dataset by role: text, text_pair, label (default: detected; recorded)", factory=dict
    )
    data_labels: list[str] = setting(
        help="label names in id order (default: the labels found, numbers by value, else sorted; recorded)",
        factory=list,
    )


# The data keys at their defaults leave the hash as it was before they existed, so older runs keep their hash.
DATA_DEFAULTS = {"data": None, "dataset": None, "dataset_config": None, "data_columns": {}, "data_labels": []}


@tracks_explicit
@dataclass
class TrainConfig(DataSettings, RunSettings):
    """Everything that defines a training run; its hash names the run."""

    verb: ClassVar[str] = "train"
    not_hashed: ClassVar[frozenset[str]] = frozenset(
        {
            "output_dir",
            "device",
            "threads",
            "progress",
            "checkpoint_every",
            "checkpoint_every_s",
            "checkpoint_keep",
            "keep_checkpoints",
            "log_every",
            "label",
            "tracker",
            "auto_precision",
            "allow_im_fallback",
        }
    )
    hash_neutral: ClassVar[dict[str, Any]] = {"patience": None}

    model: str = setting("minilm", "alias, local folder or hub name")
    task: str = setting("sst2", "task name (robustft methods lists them)")
    train_split: str = setting("train", "split to train on")
    dev_split: str = setting("dev", "split for model selection (never test)")
    n_train: int | None = setting(None, "seeded sample of the training split", min=1)
    per_class: int | None = setting(None, "or a class-balanced sample of this many per class", min=1)
    n_dev: int | None = setting(None, "seeded sample of the dev split", min=1)
    data_seed: int = setting(0, "seed of the data samples", min=0, max=MAX_SEED)
    max_length: int = setting(128, "tokens per example", min=2)
    epochs: int = setting(3, "training epochs", min=1)
    patience: int | None = setting(
        None, "stop after this many epochs without a better dev accuracy (None: train every epoch)", min=1
    )
    batch_size: int = setting(32, "examples per batch", min=1)
    eval_batch_size: int = setting(128, "examples per dev batch", min=1)
    lr: float = setting(5e-5, "AdamW learning rate", min=0.0)
    weight_decay: float = setting(0.01, "AdamW weight decay (not on biases and LayerNorms)", min=0.0)
    warmup_ratio: float = setting(0.1, "share of steps with linear warm-up", min=0.0, max=0.999)
    lr_schedule: str = setting(
        "linear",
        "after the warm-up: linear or cosine (decay to 0), or constant",
        choices=("linear", "cosine", "constant"),
    )
    max_grad_norm: float = setting(1.0, "gradient clipping norm (0: no clipping)", min=0.0)
    grad_accum: int = setting(1, "batches per optimizer step", min=1)
    precision: str = setting("auto", "auto, bf16, fp16 or fp32 (autocast)", choices=PRECISIONS)
    auto_precision: str | None = setting(
        None,
        "what precision 'auto' stands for (default: this machine's choice, bf16 only where it is native); a bench "
        "sets it to what its finished trainings ran in, so that a study moved to another machine keeps one precision",
        choices=PRECISIONS[1:],
    )
    group_by_length: bool = setting(True, "batches of similar length, padded to the longest in the batch")
    pad_to_max_length: bool = setting(False, "pad every batch to max_length (the slow baseline, for benchmarks)")
    seed: int = setting(0, "seed of initialisation, batch order and dropout", min=0, max=MAX_SEED)
    method: str = setting("standard", "training objective (robustft methods lists them)")
    method_args: dict[str, Any] = setting(help="settings of the method", factory=dict)
    arch: str = setting("plain", "plain, im (IM-BERT) or ex (EX-BERT)", choices=("plain", "im", "ex"))
    im: dict[str, Any] = setting(
        help="IM/EX connection settings (K, eta, dt, layers, form, grad, solver, beta, memory, halvings)", factory=dict
    )
    allow_im_fallback: bool = setting(
        False, "go on when more than 5% of the IM solves fall back to the explicit step (the share is recorded)"
    )
    checkpoint_every: int = setting(0, "optimizer steps between mid-epoch checkpoints (0: off)", min=0)
    checkpoint_every_s: float = setting(
        600.0, "seconds between mid-epoch checkpoints (0: off; always at epoch ends)", min=0.0
    )
    checkpoint_keep: int = setting(2, "complete checkpoints kept (the older ones are the fallback)", min=1)
    keep_checkpoints: bool = setting(
        False, "keep the checkpoints (optimizer state) after the run finishes; by default only best/ stays"
    )
    log_every: int = setting(20, "optimizer steps between log lines", min=1)
    output_dir: str | None = setting(None, "run folder (default runs/<task>-<method>-<arch>-<hash8>)")
    label: str | None = setting(None, "the model's name in reports (default <arch>+<method>)")
    tracker: str | None = setting(None, TRACKERS_HELP)

    def validate(self):
        validate(self)
        if self.dev_split.startswith("test"):
            raise ConfigError("dev_split: model selection on a test split is not allowed; use a dev split")
        if self.task.startswith(EVALUATION_ONLY_TASKS):
            raise ConfigError(
                f"task: '{self.task}' is an evaluation set (attack or AdvGLUE); never train or select on it"
            )
        if self.n_train is not None and self.per_class is not None:
            raise ConfigError("n_train and per_class: give one of them, not both")
        return self

    @property
    def wanted_precision(self) -> str:
        """`precision`, its 'auto' replaced by `auto_precision` where one is set."""
        return self.auto_precision if self.precision == "auto" and self.auto_precision else self.precision


@tracks_explicit
@dataclass
class EvalConfig(DataSettings, RunSettings):
    """Clean accuracy of a model (a run folder or a model folder) on a task split, per example."""

    verb: ClassVar[str] = "eval"
    not_hashed: ClassVar[frozenset[str]] = frozenset(
        {"output_dir", "device", "threads", "progress", "model", "shard", "allow_im_fallback"}
    )

    model: str = setting(None, "run folder (its best/ model), model folder, alias or hub name")
    task: str = setting("sst2", "task name (default: a trained run's own task or data file, else sst2)")
    split: str = setting(
        "dev", "split to score (default: dev; of a --data file the model did not train on: test, every row)"
    )
    n: int | None = setting(None, "seeded sample of n examples (all if larger)", min=1)
    seed: int = setting(0, "seed of the sample", min=0, max=MAX_SEED)
    max_length: int | None = setting(None, "tokens per example (default: the trained run's, else 128)", min=2)
    batch_size: int = setting(128, "examples per batch", min=1)
    precision: str | None = setting(None, "auto, bf16, fp16, fp32 (default: the trained run's)", choices=PRECISIONS)
    allow_im_fallback: bool = setting(
        False, "go on when more than 5% of the IM solves fall back to the explicit step (the share is recorded)"
    )
    output_dir: str | None = setting(None, "run folder (default <model run>/eval-<task>-<split>...)")
    shard: str | None = setting(None, SHARD_HELP)
    # certified accuracy (evaluation/certify.py): added after runs were made, so neutral in the hash at its defaults
    hash_neutral: ClassVar[dict[str, Any]] = {"certify": False, "certify_samples": 1000, "certify_alpha": 0.05}
    certify: bool = setting(False, "also the certified accuracy of a SAFER or RanMASK model (its ensemble's bound)")
    certify_samples: int = setting(1000, "noisy copies per example for the certificate's vote count", min=1)
    certify_alpha: float = setting(0.05, "1 - confidence of the certificate's lower bound", min=1e-6, max=0.5)


@tracks_explicit
@dataclass
class AttackConfig(DataSettings, RunSettings):
    """A word-substitution attack of a model on a seeded sample of a task split."""

    verb: ClassVar[str] = "attack"
    not_hashed: ClassVar[frozenset[str]] = frozenset(
        {"output_dir", "device", "threads", "progress", "model", "first", "shard"}
        | {"concurrent_examples", "compile_victim"}  # speed only: the same records up to float noise
    )

    model: str = setting(None, "run folder (its best/ model), model folder, alias or hub name")
    task: str = setting("sst2", "task name (default: a trained run's own task or data file, else sst2)")
    split: str | None = setting(
        None, "split (default: test if the task has one, else dev); of the run's own --data file: its held-out dev rows"
    )
    recipe: str = setting("textfooler", "pwws, textfooler, bert-attack, genetic, textbugger, deepwordbug or ascc")
    recipe_args: dict[str, Any] = setting(help="recipe settings, e.g. --recipe_args.neighbours glove", factory=dict)
    protocol: str | None = setting(
        None,
        "textdefender: unified constraints (30% words, USE 0.840845, 50 x words); rift: the RIFT release's PWWS and "
        "genetic settings (no stopword filter, PWWS's fixed swaps over counter-fitted neighbours, no word cap)",
        choices=(None, "textdefender", "rift"),
    )
    n: int = setting(1000, "seeded sample size (all if larger)", min=1)
    seed: int = setting(0, "seed of the sample and of the attack", min=0, max=MAX_SEED)
    query_budget: int | None = setting(None, "queries per example, in query_budget_unit", min=1)
    query_budget_unit: str | None = setting(
        None,
        "textattack (every text handed to the goal function, the default) or distinct (each input once)",
        choices=(None, "textattack", "distinct"),
    )
    pair_words: str | None = setting(
        None,
        "pairs: joint (premise + hypothesis words, TextAttack's, the default) or perturbed (the hypothesis alone)",
        choices=(None, "joint", "perturbed"),
    )
    time_limit_s: float | None = setting(
        None,
        "seconds of work per example (a stopped process's pause not counted), then it is recorded as failed "
        "(default none)",
        min=0.0,
    )
    recheck_full_precision: bool | None = setting(
        None, "re-check bf16/fp16 successes in fp32; an unconfirmed one is attacked again in fp32 (default true)"
    )
    first: int | None = setting(None, "attack only the first K examples now (the rest later with --resume)", min=1)
    batch_size: int = setting(64, "victim queries per forward", min=1)
    # 8: TextFooler 1.35x and PWWS 1.2x faster at two CPU threads, outcomes unchanged on 1,000 SST-2 test examples
    # (docs/performance.md, Batching across examples); 1: one at a time
    concurrent_examples: int = setting(
        8, "examples attacked at once, sharing each model call (bigger batches; same records up to float noise)", min=1
    )
    compile_victim: bool = setting(
        False, "torch.compile the model for bf16/fp16 queries (fp32 re-checks stay eager); compiling takes seconds"
    )
    max_length: int | None = setting(None, "tokens per query (default: the trained run's, else the model's)", min=2)
    precision: str | None = setting(None, "auto, bf16, fp16, fp32 (default: the trained run's)", choices=PRECISIONS)
    mlm: str | None = setting(None, "masked LM for bert-attack and the genetic LM filter")
    output_dir: str | None = setting(None, "run folder (default <model run>/attack-<recipe>-<task>-<split>...)")
    shard: str | None = setting(None, SHARD_HELP)


@tracks_explicit
@dataclass
class ProbeConfig(DataSettings, RunSettings):
    """Hidden-state distance per layer under word swaps or embedding noise, for several models."""

    verb: ClassVar[str] = "probe"

    models: list[str] = setting(help="[NAME=]PATH of saved models or run folders (repeat --models)", factory=list)
    base: str | None = setting(None, "one checkpoint probed as several variants (alias, folder or hub name)")
    variants: str = setting("plain,ex,im", "with base: plain, ex and/or im (im settings from --im.*)")
    im: dict[str, Any] = setting(
        help="IM/EX settings for the base variants (K, eta, dt, layers, form, solver, beta, memory, halvings)",
        factory=dict,
    )
    task: str = setting("sst2", "task name")
    split: str = setting("dev", "split")
    n: int = setting(200, "seeded sample of n texts", min=1)
    seed: int = setting(0, "seed", min=0, max=MAX_SEED)
    perturb: str = setting("swap", "swap (counter-fitted neighbours) or noise", choices=("swap", "noise"))
    swaps: int = setting(1, "words swapped per text", min=1)
    noise: float = setting(0.05, "std of the word-embedding noise", min=0.0)
    max_length: int = setting(128, "tokens per text", min=2)
    precision: str = setting(
        "fp32", "auto, bf16, fp16, fp32 (distances are measured in fp32 by default)", choices=PRECISIONS
    )
    output_dir: str | None = setting("probe", "run folder for probe.json and probe.png")


@tracks_explicit
@dataclass
class BenchConfig(RunSettings):
    """A matrix of methods x tasks x training sizes x seeds, each trained model then evaluated (clean, AdvGLUE,
    attacks) on identical examples with identical constraints. Every cell is a run folder."""

    verb: ClassVar[str] = "bench"
    not_hashed: ClassVar[frozenset[str]] = frozenset(
        {"output_dir", "device", "threads", "progress", "shard", "workers", "deadline", "report_with", "wait"}
    )

    name: str = setting("custom", "name of the bench (a preset's name)")
    model: str = setting("minilm", "backbone of every cell")
    tasks: list[str] = setting(help="tasks trained and evaluated (each with its own cells)", factory=lambda: ["sst2"])
    methods: dict[str, dict] = setting(help="label -> {arch, method, im, method_args, any train key}", factory=dict)
    baseline: str = setting("bert", "the method label every other one is compared with (paired)")
    seeds: list[int] = setting(help="training seeds", factory=lambda: [0])
    sizes: list[Any] = setting(
        help="training sizes: null (the whole train_split), an int (seeded n_train) or "
        "'kshotS' (16 per class, sample S)",
        factory=lambda: [None],
    )
    train: dict[str, Any] = setting(help="train keys shared by every cell (epochs, max_length, ...)", factory=dict)
    evals: list[dict] = setting(
        help="[{task, split, n}] clean evaluations; task '{task}' is the cell's task, "
        "'advglue' every AdvGLUE split of it, 'certify: true' (certify_samples, certify_alpha) the certified "
        "accuracy too, on the SAFER and RanMASK cells only",
        factory=list,
    )
    attacks: list[dict] = setting(
        help="[{recipe, task, split, n, seed, protocol, recipe_args}] attacks of every trained model", factory=list
    )
    precision: str = setting("auto", "precision of every cell", choices=PRECISIONS)
    eval_precision: str | None = setting(
        None,
        "precision of the evaluations and attacks (default: precision). fp32 where results depend on it: bf16 "
        "TextFooler found 2.2 points fewer successes than fp32 on an IM model, 0.9 on a BERT (docs/im_bert.md)",
        choices=(None, *PRECISIONS),
    )
    output_dir: str | None = setting(None, "bench folder (default runs/bench/<name>)")
    workers: int = setting(
        1,
        "processes that run jobs at once on this machine, each taking the next job no other holds (threads: "
        "CPU cores / workers unless set). On 2 CPU cores two one-thread workers got through 1.7-1.9x the work "
        'of one two-thread process in whole studies (docs/performance.md, "Bench workers")',
        min=1,
    )
    shard: str | None = setting(
        None,
        "i/n: run only the cells of slice i of n (each cell with its evaluations and "
        "attacks); default under torchrun: RANK/WORLD_SIZE",
    )
    deadline: str | None = setting(
        None,
        "UTC time YYYY-MM-DDTHH:MM (e.g. a session's end): no cell starts training unless the estimate says its "
        "training, evaluations and attacks end by then (its model does not outlive the session)",
    )
    wait: bool = setting(
        True,
        "wait for the jobs another process holds (and the evaluations and attacks of the models it trains); "
        "false: leave them to it and end when nothing else is left here, e.g. to start the next study "
        "(scripts/cpu_queue.sh)",
    )
    report_with: list[str] = setting(
        help="names of other benches whose run folders this bench's report also reads (beside this bench's folder, "
        "or as published in docs/results/<name>/runs): e.g. the bench that trained the SST-2 models of a five-task "
        "AdvGLUE comparison",
        factory=list,
    )


@dataclass
class ReportConfig:
    """Tables, plots and an HTML page from finished run folders. It runs nothing (no device, hash or resume)."""

    verb: ClassVar[str] = "report"

    runs: list[str] = setting(
        help="run folders, or folders that hold them at any depth (a bench folder, docs/results/<preset>/runs); "
        "`robustft report DIR...` names them first",
        factory=list,
    )
    output_dir: str = setting("report", "folder for report.md, report.json, the PNG plots and report.html")
    baseline: str | None = setting(
        None, "method label every method is compared with (default: plain+standard of the same model, task and size)"
    )
    title: str = setting("robustft report", "title of report.md and report.html")
    plots: bool = setting(True, "write the PNG plots (needs matplotlib)")
    html: bool = setting(True, "write report.html with the tables, plots and adversarial examples")
    examples_per_run: int = setting(200, "attacked examples of each attack run shown in report.html", min=0)

    def validate(self):
        validate(self)
        return self


VERB_CONFIGS = {c.verb: c for c in (TrainConfig, EvalConfig, AttackConfig, ProbeConfig, BenchConfig, ReportConfig)}

# Old flags -> (new key, how the value changes). They still work, with a warning.
LEGACY = {
    "no_plots": ("plots", lambda v: not v),  # report's
    "bf16": ("precision", lambda v: "bf16" if v else "fp32"),
    "no_bf16": ("precision", lambda v: "fp32" if v else None),
    "num_examples": ("n", None),
    "out": ("output_dir", None),
    "output": ("output_dir", None),
    "no_progress": ("progress", lambda v: not v),
    "quiet": ("progress", lambda v: not v),
    "model": ("models", None),
}


# Checks of the settings inside a group whose keys a higher layer declares: field name -> check(cfg), raising a
# ConfigError. The layers register them at import (`robustft.models.im_settings` for `im`, the objectives for
# `method_args`); importing any part of robustft imports them all (robustft/__init__.py), so `build_config`
# always runs them.
GROUP_CHECKS: dict[str, Callable[[Any], None]] = {}


def register_group_check(field_name: str, check: Callable[[Any], None]) -> None:
    GROUP_CHECKS[field_name] = check


def validate(cfg) -> None:
    """Types, finiteness, ranges and choices of every field, with one message naming the key."""
    for f in dataclasses.fields(cfg):
        value, meta = getattr(cfg, f.name), f.metadata
        if value is None:
            continue
        value = check_kind(cfg, f, value)
        check_finite(f.name, value)
        if isinstance(value, int) and not isinstance(value, bool) and meta.get("max") is None and value > MAX_COUNT:
            raise ConfigError(f"{f.name}: must be at most {MAX_COUNT}, got {value}")
        if meta.get("min") is not None and isinstance(value, int | float) and value < meta["min"]:
            raise ConfigError(f"{f.name}: must be at least {meta['min']}, got {value}")
        if meta.get("max") is not None and isinstance(value, int | float) and value > meta["max"]:
            raise ConfigError(f"{f.name}: must be at most {meta['max']}, got {value}")
        if meta.get("choices") is not None and value not in meta["choices"]:
            known = ", ".join(str(c) for c in meta["choices"] if c is not None)
            raise ConfigError(f"{f.name}: expected one of {known}, got {value!r}")
    if getattr(cfg, "model", "present") in (None, ""):
        raise ConfigError("model: a value is required (--model PATH)")
    check_output_dir(getattr(cfg, "output_dir", None))
    for seed in getattr(cfg, "seeds", None) or ():
        if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed <= MAX_SEED:
            raise ConfigError(f"seeds: every seed must be a whole number in 0..{MAX_SEED}, got {seed!r}")
    for name, check in GROUP_CHECKS.items():
        if hasattr(cfg, name):
            check(cfg)
    if getattr(cfg, "shard", None) is not None:
        cfg.shard = format_shard(parse_shard(cfg.shard))


KIND_WORDS = {"int": "a whole number", "float": "a number", "bool": "true or false", "str": "text"}


def check_kind(cfg, spec, value):
    """The value has its key's declared kind (`TrainConfig(epochs="three")` stops here, before any data loads, not
    deep inside a run); a whole float of a whole-number key becomes an int (3.0 -> 3). Returns the value kept."""
    kind, optional = declared_kind(spec)
    whole = isinstance(value, int) and not isinstance(value, bool)
    fits = {
        "str": isinstance(value, str | os.PathLike),
        "int": whole,
        "float": whole or isinstance(value, float),
        "bool": isinstance(value, bool),
        "list": isinstance(value, list | tuple),
        "dict": isinstance(value, dict),
    }.get(kind, True)  # a key of any other kind is checked by its own layer
    if not fits and kind == "int" and isinstance(value, float) and value.is_integer():
        value, fits = int(value), True
        setattr(cfg, spec.name, value)
    if not fits:
        wanted = KIND_WORDS.get(kind, f"a {kind}")
        raise ConfigError(f"{spec.name}: expects {wanted}{' or none' if optional else ''}, got {value!r}")
    return value


def check_finite(where: str, value) -> None:
    """No NaN or infinity anywhere in a value, nested groups included (`--im.eta inf` names `im.eta`)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{where}: must be a finite number, got {value}")
    if isinstance(value, dict):
        for key, item in value.items():
            check_finite(f"{where}.{key}", item)
    elif isinstance(value, list | tuple):
        for item in value:
            check_finite(where, item)


def check_output_dir(value) -> None:
    """robustft never expands '~' (neither does a quoted shell word): a folder literally named '~' would be made in
    the working directory, and a later `rm -rf ~` to clean it up would delete the home folder. An empty one
    (`--output_dir ''`, a shell variable that was not set) would be the working directory itself."""
    if isinstance(value, str) and not value.strip():
        raise ConfigError("output_dir: empty; give a folder, or leave the key out for the default")
    if isinstance(value, str) and value.startswith("~"):
        raise ConfigError(
            f"output_dir: {value!r} starts with '~', which robustft does not expand; write the folder out in full "
            f"(e.g. {Path.home() / value.lstrip('~/')}) or leave it out for the default"
        )


def parse_shard(text) -> tuple[int, int]:
    """'i/n' -> (i, n) with 0 <= i < n; a scheduler array task id is 0-based (--array=0-(n-1))."""
    index, sep, count = str(text).partition("/")
    try:
        i, n = int(index), int(count)
    except ValueError:
        i, n = -1, 0
    if not sep or n < 1 or not 0 <= i < n:
        raise ConfigError(f"shard: expected i/n with 0 <= i < n (e.g. 0/4 ... 3/4), got {text!r}")
    return i, n


def format_shard(shard: tuple[int, int]) -> str:
    return f"{shard[0]}/{shard[1]}"


def hashed_settings(cfg) -> dict[str, Any]:
    neutral = {**DATA_DEFAULTS, **cfg.hash_neutral}
    return {
        k: v
        for k, v in dataclasses.asdict(cfg).items()
        if k not in cfg.not_hashed and not (k in neutral and v == neutral[k])
    }


def config_hash(cfg) -> str:
    """sha256 of the settings that change what a run computes (of a config dataclass, or of any JSON data)."""
    data = hashed_settings(cfg) if dataclasses.is_dataclass(cfg) else cfg
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()


class CommandLineText(str):
    """A value as typed on the command line, not yet read: `apply_overrides` reads it as its key's declared type."""


NULL_WORDS = ("none", "null", "~")
TRUE_WORDS = ("true", "yes", "on", "1")
FALSE_WORDS = ("false", "no", "off", "0")


def parse_value(text: str) -> Any:
    """A YAML-ish reading of a value (for dotted keys, list and dict keys): numbers (1e-4 too), null, bools, YAML."""
    for number in (int, float):  # YAML 1.1 reads "1e-4" as a string
        try:
            return number(text)
        except ValueError:
            pass
    if text.lower() in NULL_WORDS:
        return None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def declared_kind(spec) -> tuple[str, bool]:
    """('str' | 'int' | 'float' | 'bool' | 'list' | 'dict', whether None is allowed) of a config field."""
    annotation = str(spec.type)
    optional = "None" in annotation
    base = annotation.replace(" | None", "").replace("None | ", "").strip()
    for kind in ("list", "dict"):
        if base.startswith(kind):
            return kind, optional
    return base, optional


def read_text(name: str, text: str, spec, source: str) -> Any:
    """A command-line value read as the type its key declares, not as YAML guesses it: `--output_dir '~'`,
    `--label yes` and `--task 1e3` stay strings; `--seed 1e3` is 1000; `--epochs three` is an error naming the key."""
    kind, optional = declared_kind(spec)
    if kind == "str":
        return str(text)
    lowered = text.strip().lower()
    if kind == "list" and str(spec.type).startswith("list[str]") and not text.lstrip().startswith("["):
        return str(text)  # one item of a list of strings (`--models NAME=PATH`), as typed
    if kind in ("list", "dict"):
        return parse_value(text)
    if optional and lowered in NULL_WORDS:
        return None
    if kind == "bool" and lowered in TRUE_WORDS + FALSE_WORDS:
        return lowered in TRUE_WORDS
    number = read_number(text)
    if kind == "float" and number is not None:
        return float(number)
    if kind == "int" and isinstance(number, int):
        return number
    if kind == "int" and isinstance(number, float) and math.isfinite(number) and number.is_integer():
        return int(number)  # 1e3
    wanted = {"int": "a whole number", "float": "a number", "bool": "true or false"}.get(kind, kind)
    raise ConfigError(f"{source}: '{name}' expects {wanted}{' or none' if optional else ''}, got {text!r}")


def read_number(text: str) -> int | float | None:
    for number in (int, float):
        try:
            return number(text)
        except ValueError:
            pass
    return None


def read_config_file(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file {path} does not exist")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))  # JSON is YAML too
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid YAML/JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of config keys, got {type(data).__name__}")
    return data


def _legacy(key: str, value: Any, fields: dict, source: str) -> tuple[str, Any]:
    """Map an old flag spelling to the current key (with a warning), or return the key unchanged."""
    head, dot, rest = key.partition(".")
    if head == "set" and dot:  # attack's old `--set k=v`
        return f"recipe_args.{rest}", value
    if isinstance(value, CommandLineText) and head.replace("-", "_") in LEGACY and LEGACY[head.replace("-", "_")][1]:
        value = parse_value(value)  # an old flag's converter reads a bool, as before
    spelled = head.replace("-", "_")
    if spelled != head:
        warnings.warn(f"{source}: '--{head}' is the old spelling; use '--{spelled}'", FutureWarning, stacklevel=4)
    if spelled not in fields and spelled in LEGACY:
        new, convert = LEGACY[spelled]
        if new in fields:
            warnings.warn(f"{source}: '--{head}' is replaced by '--{new}'", FutureWarning, stacklevel=4)
            return new + dot + rest, convert(value) if convert else value
    return spelled + dot + rest, value


def apply_overrides(
    cfg, values: dict[str, Any] | list[tuple[str, Any]], source: str = "override", explicit: set | None = None
):
    """Set (possibly dotted) keys on a dataclass config, checking names and coercing simple types.

    A repeated key of a list field (`--models a --models b`) appends; of any other field, the last one wins."""
    fields = {f.name: f for f in dataclasses.fields(cfg)}
    lists_seen: set[str] = set()
    for raw_key, raw_value in values.items() if isinstance(values, dict) else values:
        if raw_key == "explicit_keys" and isinstance(raw_value, set):  # `cfg.__dict__` as values: bookkeeping
            continue
        key, value = _legacy(raw_key, raw_value, fields, source)
        head, _, rest = key.partition(".")
        if head not in fields:
            raise ConfigError(f"{source}: unknown config key '{raw_key}'{did_you_mean(head, fields)}")
        if explicit is not None:
            explicit.add(head)
        current = getattr(cfg, head)
        if isinstance(value, CommandLineText):
            value = parse_value(value) if rest else read_text(head, value, fields[head], source)
        if rest:
            if not isinstance(current, dict):
                raise ConfigError(f"{source}: '{head}' is not a group, so '{key}' is not a key")
            current[rest] = value
        elif isinstance(current, dict):
            if not isinstance(value, dict):
                raise ConfigError(f"{source}: '{head}' expects a mapping, got {value!r}")
            current.update(value)
        elif isinstance(current, list):
            items = value if isinstance(value, list) else [value]
            setattr(cfg, head, (current if head in lists_seen else []) + items)
            lists_seen.add(head)
        else:
            setattr(cfg, head, _coerce(head, value, fields[head], source))
    return cfg


def did_you_mean(name: str, known) -> str:
    """'; did you mean 'epochs'?' for a misspelled key, else the list of known keys."""
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else f"; known keys: {', '.join(known)}"


def _coerce(name, value, spec, source):
    annotation = str(spec.type)
    if value is None and ("None" in annotation or spec.default is None):
        return None
    if "float" in annotation and isinstance(value, str):
        try:
            return float(value)  # YAML files: "1e-4" is a string to YAML 1.1
        except ValueError:
            pass
    if "float" in annotation and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if "int" in annotation and isinstance(value, int) and not isinstance(value, bool):
        return value
    if "int" in annotation and isinstance(value, float) and value.is_integer() and "float" not in annotation:
        return int(value)
    if "bool" in annotation and isinstance(value, bool):
        return value
    if "str" in annotation and not isinstance(value, dict | list | bool) and value is not None:
        return str(value)
    raise ConfigError(f"{source}: '{name}' expects {annotation.replace(' | None', ' or none')}, got {value!r}")


def parse_pairs(overrides: list[str]) -> list[tuple[str, Any]]:
    pairs = []
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"override '{item}' must look like key=value")
        pairs.append((key.lstrip("-"), CommandLineText(value)))
    return pairs


def build_config(cls, files: list[str] = (), overrides: list[str] = (), base: tuple[str, dict] | None = None):
    """A validated config from defaults, then `base` (a preset: its name and values), then each file in order,
    then `key=value` overrides.

    The keys set by a file or an override are kept in `cfg.explicit_keys` (a method preset fills only the others).
    """
    cfg, explicit = cls(), set()
    if base is not None:
        apply_overrides(cfg, base[1], source=f"preset {base[0]}", explicit=explicit)
    for path in files:
        apply_overrides(cfg, read_config_file(path), source=str(path), explicit=explicit)
    apply_overrides(cfg, parse_pairs(list(overrides)), source="command line", explicit=explicit)
    cfg.explicit_keys = explicit
    return cfg.validate()


def copy_config(cfg, **changes):
    """`dataclasses.replace(cfg, **changes)` that keeps which keys were chosen (and counts the changed ones)."""
    copied = dataclasses.replace(cfg, **changes)
    copied.explicit_keys = explicit_keys(cfg) | set(changes)
    return copied


def explicit_keys(cfg) -> set[str]:
    """Keys the user chose: those recorded by `build_config`, else those that differ from the defaults."""
    if hasattr(cfg, "explicit_keys"):
        return set(cfg.explicit_keys)
    default = type(cfg)()
    return {f.name for f in dataclasses.fields(cfg) if getattr(cfg, f.name) != getattr(default, f.name)}


def describe_keys(cls) -> str:
    """`--help` text: every key with its default and what it means."""
    lines, common = [], {f.name for f in dataclasses.fields(RunSettings)}
    fields = dataclasses.fields(cls)
    for f in [f for f in fields if f.name not in common] + [f for f in fields if f.name in common]:
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        text = f.metadata.get("help", "")
        # a help that states its own default ("(default: the trained run's)", "off by default") gets no second one
        lines.append(f"  --{f.name:<20} {text}" + ("" if "default" in text else f" (default {default!r})"))
    return "\n".join(lines)
