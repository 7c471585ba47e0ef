"""The parts every verb config is made of: `setting` (a key with its help and range), the explicit-key record, the
keys every verb has, a user's own data, and the hash of the settings that change what a run computes."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, ClassVar

from robustft.config.checks import MAX_THREADS, validate

PRECISIONS = ("auto", "bf16", "fp16", "fp32")
SHARD_HELP = "i/n: only slice i of n (0-based), merged when all n are done (default under torchrun: RANK/WORLD_SIZE)"
TRACKERS_HELP = "log to an accelerate tracker (tensorboard, wandb, mlflow, ...); off by default"


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
    '<file stem>-<sha256[:8]>', so a changed file is a new run) by the data layer when a verb checks its config
    (`robustft.verbs.check`)."""

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
