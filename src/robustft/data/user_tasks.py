"""A user's own data as a task like the registered ones, so that every verb works with it.

`--data FILE` (CSV, TSV, JSONL) or `--dataset NAME [--dataset_config C]` is turned into a `Task` by `resolve_data`,
which every verb calls on its config before it loads data (`robustft.verbs.check`): its columns are named
(`--data_columns.text review`) or detected, its labels mapped to ids in a listed order (`--data_labels`, else the
labels found: whole numbers by value, other labels alphabetically), and the config's `task` names it. The detected
columns and labels are written into the config, so config.json records them, and the label names become the
model's id2label. A task's name carries the content hash of its data ('<stem>-<sha256[:8]>'), which is in the run
hash: a changed file is a new run, never a resumed one; `identity` gives the run's inputs their path and hash.

Splits: a file's train and dev are a fixed seeded 90/10 split of its rows and its test split is every row (for a
held-out file); a dataset keeps its splits, its validation split is dev (or, without one, 10% of train).
"""

from __future__ import annotations

import functools
import logging
import random
import re
from pathlib import Path

from robustft import resources
from robustft.config import explicit_keys
from robustft.data import user_datasets
from robustft.data.example import Example
from robustft.data.tasks import Split, Task, register
from robustft.data.user_files import Rows, detect_columns, label_names, raw_label, read_rows, to_examples
from robustft.errors import ConfigError

log = logging.getLogger("robustft.data")

DEV_SHARE = 0.1  # of a file's rows (or a dataset's train split without a validation split) held out as dev
SPLIT_SEED = 0  # fixed: the same file always splits the same way
IDENTITIES: dict[str, dict[str, str]] = {}  # task name -> {'data:<path>' or 'dataset:<name>': sha256}


def identity(task_name: str) -> dict[str, str]:
    """What a user task's run records among its inputs (its file's path and sha256); {} for a registered task."""
    return dict(IDENTITIES.get(task_name, {}))


def resolve_data(cfg) -> None:
    """The data keys' check: with --data or --dataset, register its task, point `cfg.task` at it and record the
    columns and labels used; without either, refuse the keys that only mean something with one."""
    if not cfg.data and not cfg.dataset:
        stray = [key for key in ("dataset_config", "data_columns", "data_labels") if getattr(cfg, key)]
        if stray:
            raise ConfigError(f"{stray[0]}: applies only with --data FILE or --dataset NAME")
        return
    if cfg.data and cfg.dataset:
        raise ConfigError("data and dataset: give one of them, not both")
    if cfg.data and cfg.dataset_config:
        raise ConfigError("dataset_config: applies to --dataset, not to a --data file")
    given = (tuple(sorted(cfg.data_columns.items())), tuple(str(n) for n in cfg.data_labels))
    task, columns = file_task(cfg.data, *given) if cfg.data else dataset_task(cfg.dataset, cfg.dataset_config, *given)
    if "task" in explicit_keys(cfg) and cfg.task != task.name:
        source = f"--data {cfg.data}" if cfg.data else f"--dataset {cfg.dataset}"
        raise ConfigError(f"task: '{cfg.task}' and {source}: give one of them, not both")
    register(task)
    IDENTITIES[task.name] = task_identity(cfg)
    cfg.task, cfg.data_columns, cfg.data_labels = task.name, columns, list(task.label_names)


def task_identity(cfg) -> dict[str, str]:
    if cfg.data:
        return {f"data:{Path(cfg.data).resolve()}": resources.file_sha256(cfg.data)}
    splits = user_datasets.load_splits(cfg.dataset, cfg.dataset_config)
    return {f"dataset:{cfg.dataset}/{cfg.dataset_config}": user_datasets.fingerprint(splits)}


def file_task(path_text: str, columns: tuple, labels: tuple) -> tuple[Task, dict]:
    path = Path(path_text)
    if not path.is_file():
        raise ConfigError(f"data: {path} does not exist (or is not a file)")
    return _file_task(str(path.resolve()), resources.file_sha256(str(path)), columns, labels)


@functools.lru_cache(maxsize=8)
def _file_task(path_text: str, sha256: str, given_columns: tuple, given_labels: tuple) -> tuple[Task, dict]:
    """Read once per file content, columns and labels asked for."""
    path = Path(path_text)
    rows = read_rows(path)
    columns, names = _columns_and_labels([rows], dict(given_columns), given_labels, path.name, None)
    examples = to_examples(rows, columns, names)
    if len(examples) < 2:
        raise ConfigError(f"data: {path} has {len(examples)} row(s); a train and a dev split need at least 2")
    splits = {**held_out(examples), "test": examples}
    note = (
        f"your file {path} (sha256 {sha256[:12]}): {describe(columns, names)}; train/dev: a fixed seeded "
        f"90/10 split of its {len(examples)} rows, test: every row"
    )
    return make_task(f"{slug(path.name.split('.')[0])}-{sha256[:8]}", names, columns, splits, note), columns


def dataset_task(name: str, config: str | None, columns: tuple, labels: tuple) -> tuple[Task, dict]:
    splits = user_datasets.load_splits(name, config)
    return _dataset_task(name, config, user_datasets.fingerprint(splits), columns, labels)


@functools.lru_cache(maxsize=4)
def _dataset_task(name: str, config: str | None, digest: str, given_columns: tuple, given_labels: tuple):
    """A dataset's splits as a task (validation is dev), read once per dataset content, columns and labels."""
    loaded = user_datasets.load_splits(name, config)
    where = f"{name}/{config}" if config else name
    first = next(iter(loaded.values()))
    columns = detect_columns(first.column_names, dict(given_columns), f"dataset {where}")
    rows = {split: user_datasets.split_rows(ds, where, split, columns["label"]) for split, ds in loaded.items()}
    class_names = given_labels or user_datasets.class_names(loaded, columns["label"]) or ()
    columns, names = _columns_and_labels(list(rows.values()), columns, class_names, f"dataset {where}", columns)
    examples = {("dev" if s == "validation" else s): to_examples(r, columns, names) for s, r in rows.items()}
    if "dev" not in examples and "train" in examples:
        examples.update(held_out(examples["train"]))
    note = f"dataset {where}: {describe(columns, names)}; splits {', '.join(examples)} (validation is dev)"
    task_name = f"{slug(Path(name).name)}{f'-{slug(config)}' if config else ''}-{digest[:8]}"
    return make_task(task_name, names, columns, examples, note), columns


def _columns_and_labels(rows: list[Rows], given: dict, labels: tuple, where: str, columns: dict | None):
    """The columns (detected unless already chosen) and the label names in id order (the given ones, else those
    found in every row); fewer than two labels is an error, as a classifier needs two."""
    columns = columns or detect_columns(rows[0].columns, given, where)
    names = tuple(labels) or label_names(
        raw_label(r.path, line, record, columns["label"]) for r in rows for line, record in r.rows
    )
    if len(names) < 2:
        raise ConfigError(
            f"data_labels: {where} has the label(s) {list(names)} only; a classifier needs two or more: list them "
            f"in id order with --data_labels"
        )
    log.info("%s: %s", where, describe(columns, names))
    return columns, names


def held_out(examples: list[Example]) -> dict[str, list[Example]]:
    """A fixed seeded split: 10% (at least one example) as dev, the rest as train, each in file order."""
    order = list(range(len(examples)))
    random.Random(SPLIT_SEED).shuffle(order)
    n_dev = max(1, round(len(order) * DEV_SHARE))
    dev, train = sorted(order[:n_dev]), sorted(order[n_dev:])
    return {"train": [examples[i] for i in train], "dev": [examples[i] for i in dev]}


def make_task(name: str, names: tuple, columns: dict, splits: dict[str, list[Example]], note: str) -> Task:
    """A task whose splits hand out the examples already read (no file under the data root to read again)."""
    fields = tuple(c for c in (columns["text"], columns["text_pair"]) if c)
    read = {split: Split((), lambda paths, held=tuple(examples): list(held)) for split, examples in splits.items()}
    return Task(name, tuple(names), fields, read, note=note)


def describe(columns: dict, names) -> str:
    """'text column review, label column stars; labels 0=bad, 1=good' (printed, and in the task's note)."""
    used = ", ".join(f"{role} column {column}" for role, column in columns.items() if column)
    return f"{used}; labels {', '.join(f'{i}={n}' for i, n in enumerate(names))}"


def slug(text: str) -> str:
    """A name safe in folder names: letters, digits, '.', '_' and '-' kept, anything else '_'."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._-") or "data"
