"""What a task is (label names, text fields, splits and how to read each, a hub twin) and the registry that
maps its name to it. The tasks themselves are registered by `catalog`, `attack_sets` and `low_resource`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from robustft.data import readers as r
from robustft.data.example import Example
from robustft.errors import ConfigError, suggest

SENTIMENT = ("negative", "positive")
NLI3 = ("entailment", "neutral", "contradiction")  # GLUE MNLI order; SNLI and AdvGLUE use it too
NLI2 = ("entailment", "not_entailment")
PARAPHRASE = ("not_duplicate", "duplicate")
TOPIC = ("World", "Sports", "Business", "Sci/Tech")


def names_map(names) -> dict[str, int]:
    return {n: i for i, n in enumerate(names)}


def index_map(names) -> dict[str, int]:
    return {str(i): i for i in range(len(names))}


@dataclass(frozen=True)
class Split:
    files: tuple[str, ...]  # relative to the data root
    read: Callable[[list[Path]], list[Example]]
    note: str = ""


@dataclass(frozen=True)
class HubSource:
    """Where `datasets.load_dataset` finds the task: columns and label ids follow the registry's."""

    path: str
    config: str | None
    splits: dict[str, str]
    columns: tuple[str, ...]
    label: str = "label"


@dataclass(frozen=True)
class Task:
    name: str
    label_names: tuple[str, ...]
    text_fields: tuple[str, ...]
    splits: dict[str, Split]
    hub: HubSource | None = None
    note: str = ""
    files: dict[str, str] = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        # a user's data (data.user_tasks) reads no data-root file
        object.__setattr__(self, "files", {s: sp.files[0] for s, sp in self.splits.items() if sp.files})

    @property
    def is_pair(self) -> bool:
        return len(self.text_fields) == 2

    @property
    def perturb_field(self) -> str:
        """The text attacks and defenses perturb: a pair's second (hypothesis, sentence, question2)."""
        return "text_b" if self.is_pair else "text_a"

    @property
    def num_labels(self) -> int:
        return len(self.label_names)


TASKS: dict[str, Task] = {}


def register(task: Task) -> Task:
    TASKS[task.name] = task
    return task


def one(read, *files, note=""):
    return Split(files, lambda paths: read(*paths), note)


def tsv(file: str, columns: dict[str, str], names, repeats: tuple[str, int] | None = None) -> Split:
    """A headed TSV whose labels are ids or label names."""
    return one(lambda p: r.read_tsv(p, columns, {**index_map(names), **names_map(names)}, repeats), file)


def subset(folder: str, names, file: str, pair: bool = True) -> Split:
    return one(
        lambda p: r.read_json_subset(p, {**names_map(names), **index_map(names)}, pair),
        f"glue_subsets/{folder}/{file}.json",
    )


def get_task(name: str) -> Task:
    if name not in TASKS:
        raise ConfigError(f"unknown task '{name}'{suggest(name, TASKS)}; known tasks: {', '.join(sorted(TASKS))}")
    return TASKS[name]
