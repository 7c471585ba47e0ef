"""`Run`: one run folder, either opened to write (locked until `close`, see `folder.open_run`) or read back whole
(`listing.read_run`, the report's input)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from robustft.atomic import atomic_write_json, atomic_write_text
from robustft.runs import lock
from robustft.runs.names import EXAMPLES, METRICS, shard_file
from robustft.runs.records import dumps_lines, load_records, read_json


@dataclass
class Run:
    path: Path
    verb: str
    description: dict  # config.json
    finished: bool = False  # a finished run of the same config was found: nothing to compute
    _lock: IO | None = field(default=None, repr=False)
    shard: tuple[int, int] | None = None  # (i, n): this process writes shard i's files of n
    merged: bool = False  # a sharded run whose shards are already merged: `metrics` is the whole run's
    # what `read_run` loaded (a run opened to write reads its files when asked instead)
    name: str = ""  # for tables and links: the path relative to the folders listed together
    examples: list[dict] | None = None  # eval: prediction lines; attack: AttackRecord dicts
    probe: dict | None = None
    extra: dict = field(default_factory=dict)
    loaded_metrics: dict | None = field(default=None, repr=False)

    @property
    def meta(self) -> dict:
        """config.json (the report's name for `description`)."""
        return self.description

    @property
    def config(self) -> dict:
        return self.description.get("config", {})

    @property
    def model_config(self) -> dict | None:
        """The training config of the model this run concerns (its own for train runs)."""
        if self.verb == "train":
            return self.config
        model_run = self.description.get("model_run")
        return model_run.get("config") if model_run else None

    @property
    def metrics(self) -> dict | None:
        """metrics.json: as loaded by `read_run`, else as on disk now (None before it is written)."""
        if self.loaded_metrics is not None:
            return self.loaded_metrics
        return read_json(self.file(METRICS))

    def file(self, name: str) -> Path:
        """`name` in the run folder, shard-suffixed for a shard (examples.jsonl -> examples.shard-0-of-2.jsonl)."""
        return self.path / shard_file(name, None if self.merged else self.shard)

    def records(self) -> list[dict]:
        """The good per-example records so far (the run is ours: damaged lines are dropped and redone)."""
        return load_records(self.file(EXAMPLES))

    def append(self, record: dict) -> None:
        """Append one per-example record and make it durable before returning."""
        with open(self.file(EXAMPLES), "a", encoding="utf-8") as f:
            f.write(json.dumps(record, sort_keys=True, default=str) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def write_records(self, records: list[dict]) -> None:
        atomic_write_text(self.file(EXAMPLES), dumps_lines(records))

    def write_metrics(self, metrics: dict, complete: bool = True) -> dict:
        """metrics.json, with the run's hash, so that a metrics.json is never taken for another config's."""
        metrics = {**metrics, "complete": complete, "hash": self.description["hash"]}
        if self.shard is not None and not self.merged:
            metrics = {**metrics, "shard": f"{self.shard[0]}/{self.shard[1]}"}
        atomic_write_json(self.file(METRICS), metrics)
        return metrics

    def close(self) -> None:
        lock.release(self._lock)
        self._lock = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
