"""The task registry: name -> label names, text fields, splits and how to read each split.

Offline files under the data root come first; when the data root lacks a task's file and the task
has a hub twin, `datasets.load_dataset` is used instead (for users with a network).
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from robustft import resources
from robustft.data import readers as r
from robustft.data.example import Example
from robustft.errors import ConfigError, DataFormatError, MissingResource

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
    perturb_field: str = "text_a"  # pairs perturb the hypothesis / second text
    hub: HubSource | None = None
    note: str = ""
    files: dict[str, str] = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "files", {s: sp.files[0] for s, sp in self.splits.items()})

    @property
    def is_pair(self) -> bool:
        return len(self.text_fields) == 2

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


# --- single-sentence tasks --------------------------------------------------------------------

SST_TSV = {"label": "label", "text_a": "content"}
register(
    Task(
        "sst2",
        SENTIMENT,
        ("sentence",),
        {
            "train": tsv("sst2/train.tsv", {"label": "label", "text_a": "sentence"}, SENTIMENT),
            "dev": tsv("sst2/dev.tsv", SST_TSV, SENTIMENT),
            "test": tsv("sst2/test.tsv", SST_TSV, SENTIMENT),
        },
        hub=HubSource("glue", "sst2", {"train": "train", "dev": "validation"}, ("sentence",)),
    )
)


def imdb_split(part: str):
    """Jia et al.'s lists split the 25k aclImdb train set into train/dev; every record must be in one of them."""

    def read(data: Path, *lists: Path) -> list[Example]:
        keep = None
        if lists:
            # The split lists name aclImdb files "neg/<n>_<rating>.txt"; our ids are "neg_<n>".
            wanted, other = (
                {line.strip() for line in p.read_text(encoding="utf-8").split("\n") if line.strip()} for p in lists
            )

            def keep(rec):
                if not isinstance(rec["id"], str) or "_" not in rec["id"] or not isinstance(rec["rating"], int):
                    got = f"{rec['id']!r}, {rec['rating']!r}"
                    raise ValueError(f"expected an id like 'neg_12' and an integer rating, got {got}")
                name = f"{rec['id'].replace('_', '/', 1)}_{rec['rating']}.txt"
                if name not in wanted and name not in other:
                    raise ValueError(f"record {rec['id']!r} (rating {rec['rating']}) is in neither IMDB split list")
                return name in wanted

        required = ("text", "label", "id", "rating") if lists else ("text", "label")
        return r.read_jsonl(data, index_map(SENTIMENT), keep, required)

    if part == "test":
        files: tuple[str, ...] = ("imdb/test.jsonl.gz",)
    else:
        other = "dev" if part == "train" else "train"
        files = ("imdb/train.jsonl.gz", f"synonyms/imdb_{part}_files.txt", f"synonyms/imdb_{other}_files.txt")
    return Split(files, lambda paths: read(*paths))


register(
    Task(
        "imdb",
        SENTIMENT,
        ("text",),
        {
            "train": imdb_split("train"),
            "dev": imdb_split("dev"),
            "test": imdb_split("test"),
        },
        hub=HubSource("imdb", None, {"train": "train", "test": "test"}, ("text",)),
        note="train/dev are Jia et al.'s 20k/5k split of the 25k aclImdb train set",
    )
)


def mr_split(part: str):
    """MR has no official split: a fixed seeded 80/10/10 split (seed 0) of the 10,662 sentences."""

    def read(neg: Path, pos: Path) -> list[Example]:
        examples = r.read_lines_as_class(neg, 0) + r.read_lines_as_class(pos, 1)
        order = list(range(len(examples)))
        random.Random(0).shuffle(order)
        n = len(order)
        bounds = {"train": (0, int(0.8 * n)), "dev": (int(0.8 * n), int(0.9 * n)), "test": (int(0.9 * n), n)}[part]
        return [examples[i] for i in order[bounds[0] : bounds[1]]]

    return Split(("mr/rt-polarity.neg", "mr/rt-polarity.pos"), lambda paths: read(*paths))


register(
    Task(
        "mr",
        SENTIMENT,
        ("sentence",),
        {p: mr_split(p) for p in ("train", "dev", "test")},
        hub=HubSource("rotten_tomatoes", None, {"train": "train", "dev": "validation", "test": "test"}, ("text",)),
        note="no official split offline: a fixed seeded 80/10/10 split",
    )
)

register(
    Task(
        "ag_news",
        TOPIC,
        ("text",),
        {"test": one(r.read_ag_csv, "ag_news/test.csv")},
        hub=HubSource("ag_news", None, {"train": "train", "test": "test"}, ("text",)),
        note="offline only the 7,600-example test split exists (no train/dev)",
    )
)

# --- pair tasks --------------------------------------------------------------------------------


def subset(folder: str, names, file: str, pair: bool = True) -> Split:
    return one(
        lambda p: r.read_json_subset(p, {**names_map(names), **index_map(names)}, pair),
        f"glue_subsets/{folder}/{file}.json",
    )


def snli_parallel(part: str) -> Split:
    return Split(
        (f"snli/s1.{part}", f"snli/s2.{part}", f"snli/labels.{part}"),
        lambda paths: r.read_parallel(tuple(paths), names_map(NLI3)),
    )


register(
    Task(
        "snli",
        NLI3,
        ("premise", "hypothesis"),
        {
            "train": subset("SNLI", NLI3, "train"),
            "dev": snli_parallel("dev"),
            "test": snli_parallel("test"),
        },
        perturb_field="text_b",
        hub=HubSource("snli", None, {"train": "train", "dev": "validation", "test": "test"}, ("premise", "hypothesis")),
        note="offline train is the 9k glue_subsets sample of SNLI train",
    )
)

QNLI_TSV = {"text_a": "question", "text_b": "sentence", "label": "label"}
register(
    Task(
        "qnli",
        NLI2,
        ("question", "sentence"),
        {
            "train": tsv("qnli/train_subset.tsv", QNLI_TSV, NLI2),
            "dev": tsv("qnli/glue_dev.tsv", QNLI_TSV, NLI2),
        },
        perturb_field="text_b",
        hub=HubSource("glue", "qnli", {"train": "train", "dev": "validation"}, ("question", "sentence")),
        note="offline train is a 10% subset of QNLI train; no labelled test",
    )
)

RTE_TSV = {"text_a": "sentence1", "text_b": "sentence2", "label": "label"}
register(
    Task(
        "rte",
        NLI2,
        ("sentence1", "sentence2"),
        {
            "train": tsv("rte/train.tsv", RTE_TSV, NLI2),
            "dev": tsv("rte/dev.tsv", RTE_TSV, NLI2),
        },
        perturb_field="text_b",
        hub=HubSource("glue", "rte", {"train": "train", "dev": "validation"}, ("sentence1", "sentence2")),
        note="the GLUE RTE test split is unlabelled and not registered",
    )
)

register(
    Task(
        "qqp",
        PARAPHRASE,
        ("question1", "question2"),
        {
            "train": subset("QQP", PARAPHRASE, "train"),
            "dev": subset("QQP", PARAPHRASE, "dev"),
        },
        perturb_field="text_b",
        hub=HubSource("glue", "qqp", {"train": "train", "dev": "validation"}, ("question1", "question2")),
        note="offline only the 9k/1k glue_subsets samples of QQP train",
    )
)

register(
    Task(
        "mnli",
        NLI3,
        ("premise", "hypothesis"),
        {
            "train": subset("MNLI", NLI3, "train"),
            "dev": subset("MNLI", NLI3, "dev"),
            "test_matched": one(lambda p: r.read_label_space_text(p, names_map(NLI3), "\t"), "textfooler/mnli_matched"),
            "test_mismatched": one(
                lambda p: r.read_label_space_text(p, names_map(NLI3), "\t"), "textfooler/mnli_mismatched"
            ),
        },
        perturb_field="text_b",
        hub=HubSource("glue", "mnli", {"train": "train", "dev": "validation_matched"}, ("premise", "hypothesis")),
        note="offline train/dev are glue_subsets samples of MNLI train; test_* are TextFooler's 1k dev samples",
    )
)

# --- attack sets: the TextFooler 1k samples and AdvGLUE dev -------------------------------------

for tf_name, names, pair in [
    ("ag", TOPIC, False),
    ("imdb", SENTIMENT, False),
    ("mr", SENTIMENT, False),
    ("yelp", SENTIMENT, False),
    ("snli", NLI3, True),
    ("mnli", NLI3, True),
]:
    labels = {**index_map(names), **names_map(names)}
    register(
        Task(
            f"textfooler-{tf_name}",
            names,
            ("premise", "hypothesis") if pair else ("text",),
            {
                "test": one(
                    lambda p, labels=labels, pair=pair: r.read_label_space_text(p, labels, "\t" if pair else None),
                    f"textfooler/{tf_name}",
                ),
            },
            perturb_field="text_b" if pair else "text_a",
            note="TextFooler's fixed 1,000-example attack set",
        )
    )

ADVGLUE = {
    "sst2": (SENTIMENT, ("sentence",)),
    "qqp": (PARAPHRASE, ("question1", "question2")),
    "mnli": (NLI3, ("premise", "hypothesis")),
    "mnli-mm": (NLI3, ("premise", "hypothesis")),
    "qnli": (NLI2, ("question", "sentence")),
    "rte": (NLI2, ("sentence1", "sentence2")),
}
for key, (names, fields) in ADVGLUE.items():
    register(
        Task(
            f"advglue-{key}",
            names,
            fields,
            {
                "dev": one(
                    lambda p, key=key, fields=fields, names=names: r.read_advglue(p, key, fields, index_map(names)),
                    "advglue/dev.json",
                ),
            },
            perturb_field="text_b" if len(fields) == 2 else "text_a",
            note="AdvGLUE dev: adversarial, evaluation only",
        )
    )

# --- low-resource splits: kshot/<TASK>/16-<seed>/ ------------------------------------------------

KSHOT = {  # registry name -> (folder, columns, dev file name)
    "sst2": ("SST-2", {"text_a": "sentence", "label": "label"}, "dev"),
    "snli": ("SNLI", {"text_a": "sentence1", "text_b": "sentence2", "label": "gold_label"}, "dev"),
    "mnli": ("MNLI", {"text_a": "sentence1", "text_b": "sentence2", "label": "gold_label"}, "dev_matched"),
    "qnli": ("QNLI", {"text_a": "question", "text_b": "sentence", "label": "label"}, "dev"),
    "rte": ("RTE", {"text_a": "sentence1", "text_b": "sentence2", "label": "label"}, "dev"),
    "qqp": ("QQP", {"text_a": "question1", "text_b": "question2", "label": "is_duplicate"}, "dev"),
}
KSHOT_SEEDS = (13, 21, 42, 87, 100)
# SNLI/MNLI rows list label1, then label2..label5 when five annotators voted, then gold_label: the header
# names only label1, so gold_label must be read from the end of the row, never by its header position.
SNLI_ANNOTATORS = ("label1", 4)
for task_name, (folder, cols, dev_name) in KSHOT.items():
    task = TASKS[task_name]
    for seed in KSHOT_SEEDS:
        for part, file in (("train", "train"), ("dev", dev_name)):
            task.splits[f"kshot{seed}-{part}"] = tsv(
                f"kshot/{folder}/16-{seed}/{file}.tsv", cols, task.label_names, SNLI_ANNOTATORS
            )
    for part in ("train", "dev"):
        task.splits[f"subset-{part}"] = subset(folder, task.label_names, part, task.is_pair)
    object.__setattr__(task, "files", {s: sp.files[0] for s, sp in task.splits.items()})


# --- public API ---------------------------------------------------------------------------------


def get_task(name: str) -> Task:
    if name not in TASKS:
        raise ConfigError(f"unknown task '{name}'; known tasks: {', '.join(sorted(TASKS))}")
    return TASKS[name]


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
    return _checked(task, split_name, tuple(task.splits[split_name].read(list(paths))), paths[0])


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
        ds = datasets.load_dataset(hub.path, hub.config, split=hub.splits[split_name])
    except Exception as exc:  # offline or unknown: say what was tried
        raise MissingResource(
            f"task {task.name}/{split_name} is not under the data folder ({resources.where_data_is()}) and "
            f"datasets.load_dataset({hub.path!r}, {hub.config!r}) failed: {exc}"
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
