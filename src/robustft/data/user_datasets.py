"""A Hugging Face dataset given by name and configuration (`--dataset glue --dataset_config sst2`) or as a local
folder (a dataset repository, or what `save_to_disk` wrote), read into the same rows as a user's file.

`datasets` caches what it loads; with a data root set the load runs offline (`resources.hub_offline_when_data_is_
local`), so a cached dataset loads at once and a missing one fails at once instead of after network retries."""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

from robustft import resources
from robustft.data.user_files import Rows
from robustft.errors import DataFormatError, MissingResource

UNLABELLED = -1  # what datasets store as the label of an unlabelled row (the GLUE test splits)


@functools.lru_cache(maxsize=4)
def load_splits(name: str, config: str | None) -> dict:
    """split name -> datasets.Dataset; a single Dataset (a saved folder of one split) is the 'train' split."""
    import datasets

    offline = False
    try:
        if (Path(name) / "dataset_dict.json").is_file() or (Path(name) / "state.json").is_file():
            loaded = datasets.load_from_disk(name)
        else:
            with resources.hub_offline_when_data_is_local() as offline:
                loaded = datasets.load_dataset(name, config)
    except Exception as exc:  # not cached offline, unknown name, no network: say what was tried
        first = str(exc).splitlines()[0] if str(exc) else repr(exc)
        raise MissingResource(
            f"dataset: datasets.load_dataset({name!r}, {config!r}){' offline' if offline else ''} failed: {first}"
        ) from None
    return {"train": loaded} if isinstance(loaded, datasets.Dataset) else dict(loaded)


def fingerprint(splits: dict) -> str:
    """sha256 of the splits' names and `datasets` fingerprints: a changed dataset is a new run."""
    text = ";".join(f"{name}={ds._fingerprint}" for name, ds in sorted(splits.items()))
    return hashlib.sha256(text.encode()).hexdigest()


def class_names(splits: dict, column: str) -> tuple[str, ...] | None:
    """The label names of a ClassLabel column (the ids the dataset stores), else None."""
    for ds in splits.values():
        feature = ds.features.get(column)
        if feature is not None and hasattr(feature, "names"):
            return tuple(feature.names)
    return None


def split_rows(ds, where: str, split: str, label_column: str) -> Rows:
    """The rows of one split, numbered from 1; ClassLabel ids become their names (so every source maps labels the
    same way), and an unlabelled row is an error naming the split and row."""
    feature = ds.features.get(label_column)
    names = getattr(feature, "names", None)
    rows = []
    for number, record in enumerate(ds, start=1):
        label = record.get(label_column)
        if names is not None and isinstance(label, int):
            if not 0 <= label < len(names):
                unlabelled = " (this split is unlabelled)" if label == UNLABELLED else ""
                raise DataFormatError(f"{where}[{split}]", number, f"label id {label} is not a class{unlabelled}")
            record = {**record, label_column: names[label]}
        rows.append((number, record))
    return Rows(f"{where}[{split}]", tuple(ds.column_names), rows, id_prefix=split)
