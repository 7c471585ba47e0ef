"""Reading a task's split: offline files under the data root first (cached per file set and stamps, checked), the
hub twin when the files are missing; seeded samples of a split."""

from __future__ import annotations

import functools
import random
from pathlib import Path

from robustft import resources
from robustft.data.example import Example
from robustft.data.tasks.registry import Task, get_task
from robustft.errors import ConfigError, DataFormatError, MissingResource


def _read_split(task_name: str, split_name: str) -> tuple[Example, ...]:
    task = get_task(task_name)
    if split_name not in task.splits:
        raise ConfigError(f"task '{task_name}' has no split '{split_name}'; it has {', '.join(task.splits)}")
    split = task.splits[split_name]
    if all(resources.has_data(f) for f in split.files):
        paths = tuple(resources.data_root() / f for f in split.files)
        stamps = tuple((p.stat().st_size, p.stat().st_mtime_ns) for p in paths)  # a changed file is re-read
        return _read_files(task_name, split_name, paths, stamps)
    if task.hub is not None and split_name in task.hub.splits:
        return _read_hub(task_name, split_name)
    missing = [f for f in split.files if not resources.has_data(f)]
    raise MissingResource(
        f"task {task_name}/{split_name} needs {missing} under the data folder ({resources.where_data_is()}) "
        f"and has no hub source for this split"
    )


@functools.lru_cache(maxsize=32)
def _read_files(task_name: str, split_name: str, paths: tuple[Path, ...], stamps: tuple) -> tuple[Example, ...]:
    """Read and check a split once per set of files and their sizes and times (the data root is in the key)."""
    task = get_task(task_name)
    source = paths[0] if paths else f"task {task_name}"  # a user's data (data.user_tasks) reads no data-root file
    return _checked(task, split_name, tuple(task.splits[split_name].read(list(paths))), source)


@functools.lru_cache(maxsize=8)
def _read_hub(task_name: str, split_name: str) -> tuple[Example, ...]:
    task = get_task(task_name)
    where = f"hub dataset {task.hub.path} ({task.hub.config})"
    return _checked(task, split_name, tuple(load_from_hub(task, split_name)), where)


def _checked(task: Task, split_name: str, examples: tuple[Example, ...], source) -> tuple[Example, ...]:
    """No split is empty (it would fail only after a whole epoch) and a pair task never turns single-text."""
    if not examples:
        raise DataFormatError(source, None, f"no examples for {task.name}/{split_name}")
    for ex in examples:  # the readers check this per record; this also covers the hub path
        if ex.is_pair != task.is_pair:
            kind = "a text pair" if ex.is_pair else "a single text"
            raise DataFormatError(source, None, f"example {ex.id} is {kind}, but task {task.name} is not")
    return examples


def load_examples(
    task_name: str, split: str, n: int | None = None, seed: int = 0, per_class: int | None = None, keep=None
) -> list[Example]:
    """The examples of a split, optionally a seeded sample of `n` examples or `per_class` per label, drawn from
    those `keep(example)` accepts (a protocol's pool, e.g. TextDefender attacks only texts of 5+ words)."""
    examples = [e for e in _read_split(task_name, split) if keep is None or keep(e)]
    if per_class is not None:
        return sample_per_class(examples, per_class, seed)
    if n is not None and n < len(examples):
        rng = random.Random(seed)
        examples = [examples[i] for i in sorted(rng.sample(range(len(examples)), n))]
    return examples


def split_size(task_name: str, split: str) -> int:
    """How many examples a split has: counted as `load_examples` reads it (once per set of files and stamps,
    a user's data file too), so a price never trusts a count a file no longer has."""
    return len(_read_split(task_name, split))


def sample_per_class(examples: list[Example], per_class: int, seed: int) -> list[Example]:
    """A seeded, class-balanced sample: `per_class` examples of each label (fewer if a class is short)."""
    rng = random.Random(seed)
    by_label: dict[int, list[int]] = {}
    for i, ex in enumerate(examples):
        by_label.setdefault(ex.label, []).append(i)
    chosen = [i for idx in by_label.values() for i in rng.sample(idx, min(per_class, len(idx)))]
    return [examples[i] for i in sorted(chosen)]


def load_from_hub(task: Task, split_name: str) -> list[Example]:
    """The hub path: `datasets.load_dataset`, mapped onto the registry's fields and label ids."""
    import datasets

    hub = task.hub
    try:
        with resources.hub_offline_when_data_is_local() as offline:
            ds = datasets.load_dataset(hub.path, hub.config, split=hub.splits[split_name])
    except Exception as exc:  # offline or unknown: say what was tried
        missing = ", ".join(resources.missing_data_files(task.splits[split_name].files))
        raise MissingResource(
            f"missing data file {missing} ({resources.where_data_is()}), and datasets.load_dataset({hub.path!r}, "
            f"{hub.config!r}){' offline' if offline else ''} failed: {str(exc).splitlines()[0] if str(exc) else exc!r}"
        ) from None
    out = []
    for i, row in enumerate(ds):
        texts = [row[c] for c in hub.columns]
        out.append(
            Example(
                id=f"{hub.path}:{i}",
                label=int(row[hub.label]),
                text_a=texts[0],
                text_b=texts[1] if len(texts) > 1 else None,
            )
        )
    return out
