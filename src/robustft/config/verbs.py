"""The config of each verb: a dataclass whose fields are its keys, with their defaults, help and ranges."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from robustft.config.checks import MAX_SEED, validate
from robustft.config.fields import (
    PRECISIONS,
    SHARD_HELP,
    TRACKERS_HELP,
    DataSettings,
    RunSettings,
    setting,
    tracks_explicit,
)
from robustft.errors import ConfigError

EVALUATION_ONLY_TASKS = ("advglue-", "textfooler-")


@tracks_explicit
@dataclass
class TrainConfig(DataSettings, RunSettings):
    """Everything that defines a training run; its hash names the run."""

    verb: ClassVar[str] = "train"
    not_hashed: ClassVar[frozenset[str]] = RunSettings.not_hashed | frozenset(
        "checkpoint_every checkpoint_every_s checkpoint_keep keep_checkpoints log_every label tracker auto_precision "
        "allow_im_fallback".split()
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
    # at most 1: AdamW's decay shrinks each weight by lr * weight_decay a step; 1e6 destroyed the model, exit 0
    weight_decay: float = setting(0.01, "AdamW weight decay (not on biases and LayerNorms)", min=0.0, max=1.0)
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
        | {"only", "skip"}
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
        max=1024,  # --list simulated the queue of 1e9 workers for hours; beyond the cores they are capped anyway
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
        "false: leave them to it and end when nothing else is left here, e.g. to start the next study of a queue",
    )
    report_with: list[str] = setting(
        help="names of other benches whose run folders this bench's report also reads (beside this bench's folder, "
        "or as published in docs/results/<name>/runs): e.g. the bench that trained the SST-2 models of a five-task "
        "AdvGLUE comparison",
        factory=list,
    )
    only: str | None = setting(None, "work only on the jobs whose id matches this glob from its start, e.g. 'rift/*'")
    skip: list[str] = setting(help="leave out the jobs whose id matches one of these globs (as only)", factory=list)


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
