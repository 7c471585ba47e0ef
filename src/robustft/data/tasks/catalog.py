"""The benchmark tasks: single-sentence (SST-2, IMDB, MR, AG News) and pairs (SNLI, QNLI, RTE, QQP, MNLI), each
with its offline files and, where one exists, its hub twin."""

from __future__ import annotations

import random
from pathlib import Path

from robustft.data import readers as r
from robustft.data.example import Example
from robustft.data.tasks.registry import (
    NLI2,
    NLI3,
    PARAPHRASE,
    SENTIMENT,
    TOPIC,
    HubSource,
    Split,
    Task,
    index_map,
    names_map,
    one,
    register,
    subset,
    tsv,
)

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

GLUE_SPLITS = {"train": "train", "dev": "validation"}


def register_pair(name, labels, columns, splits, hub: tuple, note: str) -> None:
    """A pair task whose hub twin (path, config, splits) has the task's own columns."""
    register(Task(name, labels, columns, splits, hub=HubSource(*hub, columns), note=note))


def snli_parallel(part: str) -> Split:
    return Split(
        (f"snli/s1.{part}", f"snli/s2.{part}", f"snli/labels.{part}"),
        lambda paths: r.read_parallel(tuple(paths), names_map(NLI3)),
    )


def glue_tsv(train: str, dev: str, columns: tuple[str, str]) -> dict[str, Split]:
    """The offline train and dev TSV files of a GLUE pair task whose TSV columns are the task's own."""
    fields = {"text_a": columns[0], "text_b": columns[1], "label": "label"}
    return {"train": tsv(train, fields, NLI2), "dev": tsv(dev, fields, NLI2)}


def textfooler_mnli(part: str) -> Split:
    return one(lambda p: r.read_label_space_text(p, names_map(NLI3), "\t"), f"textfooler/mnli_{part}")


NLI_COLUMNS = ("premise", "hypothesis")
register_pair(
    "snli",
    NLI3,
    NLI_COLUMNS,
    {"train": subset("SNLI", NLI3, "train"), "dev": snli_parallel("dev"), "test": snli_parallel("test")},
    ("snli", None, {**GLUE_SPLITS, "test": "test"}),
    "offline train is the 9k glue_subsets sample of SNLI train",
)
register_pair(
    "qnli",
    NLI2,
    ("question", "sentence"),
    glue_tsv("qnli/train_subset.tsv", "qnli/glue_dev.tsv", ("question", "sentence")),
    ("glue", "qnli", GLUE_SPLITS),
    "offline train is a 10% subset of QNLI train; no labelled test",
)
register_pair(
    "rte",
    NLI2,
    ("sentence1", "sentence2"),
    glue_tsv("rte/train.tsv", "rte/dev.tsv", ("sentence1", "sentence2")),
    ("glue", "rte", GLUE_SPLITS),
    "the GLUE RTE test split is unlabelled and not registered",
)
register_pair(
    "qqp",
    PARAPHRASE,
    ("question1", "question2"),
    {"train": subset("QQP", PARAPHRASE, "train"), "dev": subset("QQP", PARAPHRASE, "dev")},
    ("glue", "qqp", GLUE_SPLITS),
    "offline only the 9k/1k glue_subsets samples of QQP train",
)
register_pair(
    "mnli",
    NLI3,
    NLI_COLUMNS,
    {
        "train": subset("MNLI", NLI3, "train"),
        "dev": subset("MNLI", NLI3, "dev"),
        "test_matched": textfooler_mnli("matched"),
        "test_mismatched": textfooler_mnli("mismatched"),
    },
    ("glue", "mnli", {"train": "train", "dev": "validation_matched"}),
    "offline train/dev are glue_subsets samples of MNLI train; test_* are TextFooler's 1k dev samples",
)
