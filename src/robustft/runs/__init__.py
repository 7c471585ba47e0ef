"""Run folders, the protocol of every verb (train, eval, attack, probe, bench): this package is the only code that
creates, locks, reads, repairs, lists and deletes them.

A run folder holds `config.json` (the verb, its full config, a stable hash of the settings and inputs, code and library
versions, the machine, sha256 of every data file, model file and resource used), `metrics.json` (with `complete` and the
run's hash), `examples.jsonl` where the verb has examples (one line per example, appended and fsync'd as each finishes)
and a log.

Modules, one job each: `names` (the files robustft writes, and which are its own), `description` (config.json: what it
holds, the hash, reading it back), `lock` (one process per folder; the holder's pid in the lock file), `records` (JSON
and JSONL reading, with the one rule for damaged lines), `run` (the `Run` class), `folder` (create, check, clear for
--overwrite, delete), `opening` (`open_run`, the gate every verb writes through), `shards` (sharded runs and their
merge), `resolve` (model references), `result` (what a verb returns), `repair` (finishing interrupted saves, only in
validated folders), `listing` (finding, reading back and exporting run folders) and `logs` (a run's log file).
"""

from robustft.runs.description import (
    describe,
    differences,
    is_finished,
    read_description,
    read_metrics,
    resumed_description,
)
from robustft.runs.folder import clear_outputs, delete_run
from robustft.runs.listing import export_run, find_run_folders, read_run
from robustft.runs.lock import FolderInUse, hold, try_hold
from robustft.runs.logs import attach_log, detach_log
from robustft.runs.names import (
    CONFIG,
    EXAMPLES,
    EXAMPLES_GZ,
    LOCK,
    MARK,
    METRICS,
    SHARDS_LOCK,
    shard_file,
)
from robustft.runs.opening import open_run
from robustft.runs.records import load_records, read_json, read_records
from robustft.runs.repair import repair_open_run
from robustft.runs.resolve import Resolved, default_output, inherit, model_run_record, resolve
from robustft.runs.result import RunResult
from robustft.runs.run import Run
from robustft.runs.shards import finish_shard, merge_shards, open_shard, shard_indices, shard_of

__all__ = [
    "CONFIG",
    "EXAMPLES",
    "EXAMPLES_GZ",
    "LOCK",
    "MARK",
    "METRICS",
    "SHARDS_LOCK",
    "FolderInUse",
    "Resolved",
    "Run",
    "RunResult",
    "attach_log",
    "clear_outputs",
    "default_output",
    "delete_run",
    "describe",
    "detach_log",
    "differences",
    "export_run",
    "find_run_folders",
    "finish_shard",
    "hold",
    "inherit",
    "is_finished",
    "load_records",
    "merge_shards",
    "model_run_record",
    "open_run",
    "open_shard",
    "read_description",
    "read_json",
    "read_metrics",
    "read_records",
    "read_run",
    "repair_open_run",
    "resolve",
    "resumed_description",
    "shard_file",
    "shard_indices",
    "shard_of",
    "try_hold",
]
