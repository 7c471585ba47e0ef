"""Sharded runs (`--shard i/n`, or automatically under torchrun: RANK/WORLD_SIZE) share one run folder: its
config.json is the one a single process writes, and each shard writes its own shard-suffixed files
(`examples.shard-0-of-4.jsonl`, `metrics.shard-0-of-4.json`, its log), holds its own lock and resumes alone. When
the last shard finishes (or on `robustft merge RUN_DIR`), `merge_shards` writes `examples.jsonl` and `metrics.json`
exactly as one process would."""

from __future__ import annotations

import dataclasses
import logging
import time
from pathlib import Path

from robustft import runtime
from robustft.atomic import atomic_write_json
from robustft.config import parse_shard
from robustft.errors import ConfigError
from robustft.runs import lock
from robustft.runs.description import (
    describe,
    differences,
    is_finished,
    now,
    read_description,
    read_metrics,
    resumed_description,
)
from robustft.runs.folder import check_target, make_folder, remove
from robustft.runs.names import CONFIG, EXAMPLES, LOCK, METRICS, SHARDS_LOCK, is_lock, shard_file
from robustft.runs.records import load_records, read_json
from robustft.runs.run import Run

log = logging.getLogger("robustft.runs")


def shard_of(cfg) -> tuple[int, int] | None:
    """The shard this process runs: `cfg.shard` (i/n), else (RANK, WORLD_SIZE) under a launcher, else None."""
    if getattr(cfg, "shard", None):
        return parse_shard(cfg.shard)
    world = runtime.world()
    return (world.rank, world.size) if world.distributed else None


def shard_indices(count: int, shard: tuple[int, int] | None) -> list[int]:
    """The positions 0..count-1 that shard (i, n) takes: every n-th from i, so long and short items spread evenly."""
    return list(range(count)) if shard is None else list(range(shard[0], count, shard[1]))


def shard_lock(shard: tuple[int, int]) -> str:
    return f"{LOCK}.shard-{shard[0]}-of-{shard[1]}"


def _shard_files(path: Path, shard: tuple[int, int]) -> list[Path]:
    tag = f".shard-{shard[0]}-of-{shard[1]}."
    return [p for p in path.iterdir() if tag in p.name and not is_lock(p.name)]


def open_shard(
    path: str | Path,
    cfg,
    inputs: dict[str, str],
    shard: tuple[int, int],
    *,
    resume: bool = False,
    overwrite: bool = False,
    extra: dict | None = None,
) -> Run:
    """Shard i of n of the run of `cfg` in `path`. config.json is written once, as one process writes it (`shard` is
    not a setting); a finished merged run is reused; a shard continues only its own files (`resume`), and
    `overwrite` restarts only this shard (and the merged outputs); other shards' stale files are refused at merge.
    The shard's lock is taken before anything is decided or deleted."""
    path = Path(path)
    description = describe(dataclasses.replace(cfg, shard=None), inputs, extra)
    check_target(path, cfg.verb)
    make_folder(path)
    handle = lock.take(path, shard_lock(shard))
    try:
        with lock.hold(path / SHARDS_LOCK):
            saved = check_target(path, cfg.verb, locked=True, overwrite=overwrite)
            same = saved is not None and saved.get("hash") == description["hash"]
            if same and is_finished(path) and not overwrite:
                metrics = read_metrics(path)  # under the lock, as open_run reads a finished run's
                lock.release(handle)
                return Run(path, cfg.verb, saved, finished=True, shard=shard, merged=True, loaded_metrics=metrics)
            if saved is not None and not same and not overwrite:
                raise ConfigError(
                    f"output_dir: {path} holds a run with other settings ({differences(saved, description)});"
                    f" pass --overwrite to restart this shard, or choose another folder"
                )
            if overwrite:
                for stale in [path / METRICS, path / EXAMPLES, *_shard_files(path, shard)]:
                    if stale.exists() or stale.is_symlink():
                        remove(stale)
            if same:
                description = resumed_description(saved, description)
            else:
                atomic_write_json(path / CONFIG, description)
        return _check_own_files(Run(path, cfg.verb, description, _lock=handle, shard=shard), resume)
    except BaseException:
        lock.release(handle)
        raise


def _check_own_files(run: Run, resume: bool) -> Run:
    """A shard's own metrics must be of this config; an unfinished shard goes on only with `resume`."""
    mine = run.metrics
    if mine is not None and mine.get("hash") != run.description["hash"]:
        raise ConfigError(f"{run.file(METRICS)} was written with other settings; pass --overwrite to redo this shard")
    if mine is not None and mine.get("complete"):
        run.finished = True
    elif (mine is not None or run.file(EXAMPLES).exists()) and not resume:
        raise ConfigError(
            f"output_dir: {run.path} already holds an unfinished shard {run.shard[0]}/{run.shard[1]}; pass "
            f"--resume to continue it, --overwrite to start it again, or choose another folder"
        )
    return run


def _finished_groups(path: Path) -> dict[int, dict[int, dict]]:
    """{n: {i: shard i's metrics}} of every shard count n that left metrics files."""
    groups: dict[int, dict[int, dict]] = {}
    for file in path.glob("metrics.shard-*-of-*.json"):
        i, n = (int(x) for x in file.name.split(".")[1].removeprefix("shard-").split("-of-"))
        groups.setdefault(n, {})[i] = read_json(file) or {}
    return groups


def merge_shards(path: str | Path, summarize, extra_outputs=None, strict: bool = False) -> dict | None:
    """Write `examples.jsonl` and `metrics.json` of a sharded run from its shards' files, exactly as one process
    writes them, once every shard of some count n is finished with the run's hash; None (and a log line naming the
    missing shards) otherwise. `summarize(records, shard_metrics)` gives the verb's metrics; `extra_outputs(path,
    records)` writes anything else the verb has (the attack CSV). `strict`: raise, naming them, instead."""
    path = Path(path)
    with lock.hold(path / SHARDS_LOCK):
        saved = read_description(path)
        if saved is None:
            raise ConfigError(f"merge: {path} is not a robustft run folder")
        if is_finished(path):
            return read_metrics(path)
        groups = _finished_groups(path)
        if not groups:
            raise ConfigError(f"merge: {path} has no shard files (metrics.shard-I-of-N.json)")
        missing = {}
        for n, shards in sorted(groups.items()):
            todo = [
                f"{i}/{n}"
                for i in range(n)
                if not (shards.get(i, {}).get("complete") and shards[i].get("hash") == saved["hash"])
            ]
            if todo:
                missing[n] = todo
                continue
            records = []
            for i in range(n):
                records += load_records(path / shard_file(EXAMPLES, (i, n)))
            records.sort(key=lambda r: r.get("index", 0))
            merged = Run(path, saved["verb"], saved, merged=True)
            merged.write_records(records)
            if extra_outputs is not None:
                extra_outputs(path, records)
            atomic_write_json(path / CONFIG, {**saved, "shards": {"n": n, "merged": now()}})
            return merged.write_metrics(summarize(records, [shards[i] for i in range(n)]))
        names = "; ".join(", ".join(todo) for todo in missing.values())
        if strict:
            raise ConfigError(
                f"merge: {path}: these shards are missing, unfinished or were run with other settings: "
                f"{names}; run them (--shard I/N --resume, or --overwrite) and merge again"
            )
        log.info("%s: not merged yet; waiting for shards %s", path, names)
        return None


def finish_shard(path: str | Path, merge, cfg, poll_s: float = 2.0) -> dict | None:
    """After a shard is done: `merge(path)` if it was the last one. Under a launcher (no --shard), rank 0 then waits
    until the last shard has merged, so that it reports the whole run (if another rank fails, the launcher ends it)."""
    merged = merge(path)
    if merged is None and getattr(cfg, "shard", None) is None and runtime.world().main:
        while not is_finished(path):
            time.sleep(poll_s)
        merged = read_metrics(path)
    return merged
