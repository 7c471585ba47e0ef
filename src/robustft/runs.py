"""The run-folder protocol of every verb (train, eval, attack, probe, bench).

A run folder holds `config.json` (the verb, its full config, a stable hash of the settings and inputs, code and
library versions, the machine (CPU model, cores, native bf16, GPU), sha256 of every data file, model file and
resource used), `metrics.json` (with `complete`), `examples.jsonl` where the verb has examples (one line per example,
appended and fsync'd as each finishes) and a log. `open_run` is the one gate: it refuses to write into a folder
robustft did not create or that holds another verb's run, continues (`resume`) only with the same settings and inputs
and names what changed, reuses a finished run of the same config (resume or not), deletes (`overwrite`) only a
robustft run of the same verb, and locks the folder so that two processes never write into it together.

Sharded runs (`--shard i/n`, or automatically under torchrun: RANK/WORLD_SIZE) share one run folder: its config.json
is the one a single process writes, and each shard writes its own shard-suffixed files (`examples.shard-0-of-4.jsonl`,
`metrics.shard-0-of-4.json`, its log), holds its own lock and resumes alone. When the last shard finishes (or on
`robustft merge RUN_DIR`), `merge_shards` writes `examples.jsonl` and `metrics.json` exactly as one process would.
"""

from __future__ import annotations

import dataclasses
import datetime
import fcntl
import gzip
import json
import logging
import os
import shutil
import subprocess
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from robustft import runtime
from robustft.atomic import atomic_write_json, atomic_write_text, recover_folder
from robustft.config import config_hash, hashed_settings, parse_shard
from robustft.errors import ConfigError
from robustft.version import __version__

log = logging.getLogger("robustft.runs")

MARK = "robustft_run"
CONFIG, METRICS, EXAMPLES, LOCK = "config.json", "metrics.json", "examples.jsonl", ".lock"
SHARDS_LOCK = ".lock.shards"  # held briefly while a shard writes config.json or merges


def code_version() -> dict:
    import torch
    import transformers

    commit = None
    try:
        commit = (
            subprocess.run(
                ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, cwd=Path(__file__).parent
            ).stdout.strip()
            or None
        )
    except (OSError, subprocess.SubprocessError):
        pass
    return {
        "robustft": __version__,
        "git_commit": commit,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "python": sys.version.split()[0],
    }


def read_description(path: Path) -> dict | None:
    """The config.json of a robustft run folder (None when there is none, or it is not robustft's)."""
    try:
        data = json.loads((Path(path) / CONFIG).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return None
    if not isinstance(data, dict):
        return None
    if MARK not in data:  # folders written before the mark: train runs had config+hash, attacks a recipe
        if "recipe" in data and "hash" in data:
            return {**data, "verb": "attack"}
        if isinstance(data.get("config"), dict) and "hash" in data:
            return {**data, "verb": "train"}
        return None
    return data


def read_metrics(path: Path) -> dict | None:
    return read_json(Path(path) / METRICS)


def read_json(path: Path) -> dict | None:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return None


def is_finished(path: Path) -> bool:
    metrics = read_metrics(path)
    return bool(metrics and metrics.get("complete"))


@dataclass
class Run:
    """An open run folder (locked until `close`)."""

    path: Path
    verb: str
    description: dict
    finished: bool = False  # a finished run of the same config was found: nothing to compute
    _lock: Any = field(default=None, repr=False)
    shard: tuple[int, int] | None = None  # (i, n): this process writes shard i's files of n
    merged: bool = False  # a sharded run whose shards are already merged: `metrics()` is the whole run's

    @property
    def config(self) -> dict:
        return self.description["config"]

    def file(self, name: str) -> Path:
        """`name` in the run folder, shard-suffixed for a shard (examples.jsonl -> examples.shard-0-of-2.jsonl)."""
        return self.path / shard_file(name, None if self.merged else self.shard)

    def records(self) -> list[dict]:
        return load_records(self.file(EXAMPLES))

    def append(self, record: dict) -> None:
        """Append one per-example record and make it durable before returning."""
        with open(self.file(EXAMPLES), "a", encoding="utf-8") as f:
            f.write(json.dumps(record, sort_keys=True, default=str) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def write_records(self, records: list[dict]) -> None:
        atomic_write_text(
            self.file(EXAMPLES), "".join(json.dumps(r, sort_keys=True, default=str) + "\n" for r in records)
        )

    def write_metrics(self, metrics: dict, complete: bool = True) -> dict:
        metrics = {**metrics, "complete": complete}
        if self.shard is not None and not self.merged:
            metrics = {**metrics, "shard": f"{self.shard[0]}/{self.shard[1]}", "hash": self.description["hash"]}
        atomic_write_json(self.file(METRICS), metrics)
        return metrics

    def metrics(self) -> dict | None:
        return read_json(self.file(METRICS))

    def close(self) -> None:
        if self._lock is not None:
            fcntl.flock(self._lock, fcntl.LOCK_UN)
            self._lock.close()
            self._lock = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def describe(cfg, inputs: dict[str, str], extra: dict | None = None) -> dict:
    """What config.json holds for `cfg` run on `inputs` (name -> sha256 of every file read)."""
    return {
        MARK: 1,
        "verb": cfg.verb,
        "config": dataclasses.asdict(cfg),
        "hash": run_hash(cfg, inputs),
        "inputs": dict(sorted(inputs.items())),
        "versions": code_version(),
        "machine": runtime.machine(),
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        **(extra or {}),
    }


def resumed_description(saved: dict, today: dict) -> dict:
    """A resumed run keeps what it started with, noting the code and machine that go on with it."""
    return {**saved, "versions": today["versions"], "machine": today["machine"]}


def run_hash(cfg, inputs: dict[str, str]) -> str:
    return config_hash({"settings": hashed_settings(cfg), "inputs": dict(sorted(inputs.items()))})


def open_run(
    path: str | Path,
    cfg,
    inputs: dict[str, str],
    *,
    resume: bool = False,
    overwrite: bool = False,
    extra: dict | None = None,
    shard: tuple[int, int] | None = None,
) -> Run:
    """Create, continue, reuse or (with `overwrite`) restart the run folder of `cfg`; see the module docstring.
    With `shard` (i, n), open shard i's part of the shared run folder instead (`open_shard`)."""
    if shard is not None:
        return open_shard(path, cfg, inputs, shard, resume=resume, overwrite=overwrite, extra=extra)
    path = Path(path)
    description = describe(cfg, inputs, extra)
    saved = read_description(path) if path.exists() else None
    if path.exists() and not path.is_dir():
        raise ConfigError(f"output_dir: {path} is a file, not a folder")
    if path.is_dir() and any(p.name != LOCK for p in path.iterdir()):
        if saved is None:
            raise ConfigError(
                f"output_dir: {path} is not empty and is not a robustft run folder: refusing to write "
                f"into it; choose another folder"
            )
        if saved.get("verb") != cfg.verb:
            raise ConfigError(
                f"output_dir: {path} holds a robustft {saved.get('verb')} run, not a {cfg.verb} run: "
                f"refusing to write into it; choose another folder"
            )
        same = saved.get("hash") == description["hash"]
        if overwrite:
            delete_run(path, cfg.verb)
        elif same and is_finished(path):
            return Run(path, cfg.verb, saved, finished=True)
        elif not resume:
            what = "a finished run with other settings" if is_finished(path) else "an unfinished run"
            raise ConfigError(
                f"output_dir: {path} already holds {what} ({differences(saved, description)}); pass "
                f"--resume to continue it, --overwrite to start again, or choose another folder"
            )
        elif not same:
            raise ConfigError(
                f"cannot resume {path}: {differences(saved, description)}; resume with the same "
                f"settings and inputs, or --overwrite"
            )
    path.mkdir(parents=True, exist_ok=True)
    lock = _lock(path)
    if resume and saved is not None and saved.get("hash") == description["hash"]:
        description = resumed_description(saved, description)
    atomic_write_json(path / CONFIG, description)
    return Run(path, cfg.verb, description, finished=False, _lock=lock)


def differences(saved: dict, new: dict) -> str:
    """'settings changed: a, b; inputs changed: f' between two descriptions."""
    old_cfg, new_cfg = saved.get("config", {}), new.get("config", {})
    settings = sorted(k for k in set(old_cfg) | set(new_cfg) if old_cfg.get(k) != new_cfg.get(k) and k != "shard")
    old_in, new_in = saved.get("inputs", {}), new.get("inputs", {})
    files = sorted(k for k in set(old_in) | set(new_in) if old_in.get(k) != new_in.get(k))
    parts = ([f"settings changed: {', '.join(settings)}"] if settings else []) + (
        [f"inputs changed: {', '.join(files)}"] if files else []
    )
    return "; ".join(parts) or "its hash differs (written by another robustft version)"


def _lock(path: Path, name: str = LOCK):
    handle = open(path / name, "a+", encoding="utf-8")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        owner = handle.read().strip() or "unknown"
        handle.close()
        raise ConfigError(
            f"{path} is in use by another robustft process (pid {owner}); wait for it to finish or "
            f"choose another folder"
        ) from None
    handle.seek(0)
    handle.truncate()
    handle.write(str(os.getpid()))
    handle.flush()
    return handle


def shard_of(cfg) -> tuple[int, int] | None:
    """The shard this process runs: `cfg.shard` (i/n), else (RANK, WORLD_SIZE) under a launcher, else None."""
    if getattr(cfg, "shard", None):
        return parse_shard(cfg.shard)
    world = runtime.world()
    return (world.rank, world.size) if world.distributed else None


def shard_indices(count: int, shard: tuple[int, int] | None) -> list[int]:
    """The positions 0..count-1 that shard (i, n) takes: every n-th from i, so long and short items spread evenly."""
    return list(range(count)) if shard is None else list(range(shard[0], count, shard[1]))


def shard_file(name: str, shard: tuple[int, int] | None) -> str:
    if shard is None:
        return name
    stem, dot, suffix = name.partition(".")
    return f"{stem}.shard-{shard[0]}-of-{shard[1]}{dot}{suffix}"


@contextmanager
def hold(path: Path):
    """A blocking lock on `path` (short critical sections shared by the shards of a run)."""
    with open(path, "a+", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextmanager
def try_hold(path: Path):
    """A non-blocking lock on `path`: yields True while this process holds it, False (at once) when another
    process does. Released when the block ends or the process dies."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+", encoding="utf-8") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _shard_files(path: Path, shard: tuple[int, int]) -> list[Path]:
    tag = f".shard-{shard[0]}-of-{shard[1]}."
    return [p for p in path.iterdir() if tag in p.name and not p.name.startswith(".lock")]


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
    `overwrite` restarts only this shard (and the merged outputs); other shards' stale files are refused at merge."""
    path = Path(path)
    description = describe(dataclasses.replace(cfg, shard=None), inputs, extra)
    if path.exists() and not path.is_dir():
        raise ConfigError(f"output_dir: {path} is a file, not a folder")
    path.mkdir(parents=True, exist_ok=True)
    with hold(path / SHARDS_LOCK):
        saved = read_description(path)
        if saved is None and any(not p.name.startswith(".lock") for p in path.iterdir()):
            raise ConfigError(
                f"output_dir: {path} is not empty and is not a robustft run folder: refusing to write "
                f"into it; choose another folder"
            )
        if saved is not None and saved.get("verb") != cfg.verb:
            raise ConfigError(
                f"output_dir: {path} holds a robustft {saved.get('verb')} run, not a {cfg.verb} run: "
                f"refusing to write into it; choose another folder"
            )
        same = saved is not None and saved.get("hash") == description["hash"]
        if same and is_finished(path) and not overwrite:
            return Run(path, cfg.verb, saved, finished=True, shard=shard, merged=True)
        if saved is not None and not same and not overwrite:
            raise ConfigError(
                f"output_dir: {path} holds a run with other settings ({differences(saved, description)});"
                f" pass --overwrite to restart this shard, or choose another folder"
            )
        if overwrite:
            for stale in [path / METRICS, path / EXAMPLES, *_shard_files(path, shard)]:
                stale.unlink(missing_ok=True)
        if same:
            description = resumed_description(saved, description)
        else:
            atomic_write_json(path / CONFIG, description)
    lock = _lock(path, f"{LOCK}.shard-{shard[0]}-of-{shard[1]}")
    run = Run(path, cfg.verb, description, _lock=lock, shard=shard)
    mine = run.metrics()
    if mine is not None and mine.get("hash") != description["hash"]:
        run.close()
        raise ConfigError(f"{run.file(METRICS)} was written with other settings; pass --overwrite to redo this shard")
    if mine is not None and mine.get("complete"):
        run.finished = True
    elif (mine is not None or run.file(EXAMPLES).exists()) and not resume:
        run.close()
        raise ConfigError(
            f"output_dir: {path} already holds an unfinished shard {shard[0]}/{shard[1]}; pass --resume "
            f"to continue it, --overwrite to start it again, or choose another folder"
        )
    return run


def merge_shards(path: str | Path, summarize, extra_outputs=None, strict: bool = False) -> dict | None:
    """Write `examples.jsonl` and `metrics.json` of a sharded run from its shards' files, exactly as one process
    writes them, once every shard of some count n is finished with the run's hash; None (and a log line naming the
    missing shards) otherwise. `summarize(records, shard_metrics)` gives the verb's metrics; `extra_outputs(path,
    records)` writes anything else the verb has (the attack CSV). `strict`: raise, naming them, instead."""
    path = Path(path)
    with hold(path / SHARDS_LOCK):
        saved = read_description(path)
        if saved is None:
            raise ConfigError(f"merge: {path} is not a robustft run folder")
        if is_finished(path):
            return read_metrics(path)
        groups: dict[int, dict[int, dict]] = {}
        for file in path.glob("metrics.shard-*-of-*.json"):
            i, n = (int(x) for x in file.name.split(".")[1].removeprefix("shard-").split("-of-"))
            groups.setdefault(n, {})[i] = read_json(file) or {}
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
            atomic_write_json(path / CONFIG, {**saved, "shards": {"n": n, "merged": _now()}})
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
    import time

    merged = merge(path)
    if merged is None and getattr(cfg, "shard", None) is None and runtime.world().main:
        while not is_finished(path):
            time.sleep(poll_s)
        merged = read_metrics(path)
    return merged


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def delete_run(path: Path, verb: str) -> None:
    """Delete a run folder, but only a robustft run of `verb`, and never ., ~, / or a parent of the working dir."""
    resolved = path.resolve()
    protected = {Path("/").resolve(), Path.home().resolve(), *Path.cwd().resolve().parents, Path.cwd().resolve()}
    if resolved in protected:
        raise ConfigError(
            f"output_dir: refusing to delete {path} ({resolved}): it is /, your home, the working "
            f"directory or one of its parents"
        )
    saved = read_description(path)
    if saved is None or saved.get("verb") != verb:
        raise ConfigError(f"output_dir: refusing to delete {path}: it is not a robustft {verb} run")
    shutil.rmtree(path)


SUMMARY_FILES = (CONFIG, METRICS, "probe.json")
EXAMPLES_GZ = EXAMPLES + ".gz"  # per-example lines as exported (committed)


def whole_lines(path: Path) -> bytes:
    """A per-example log up to its last complete line, read without touching it (a running job appends to it):
    a line torn by a kill, or being written now, stays behind."""
    data = path.read_bytes()
    return data[: data.rfind(b"\n") + 1]


def export_run(run_dir: Path, dest: Path) -> Path:
    """A run folder's summaries, logs and per-example lines (gzipped) copied into `dest`, without its model or
    checkpoints: small enough to commit. `dest`'s own files are replaced; folders in it (a training's jobs) kept."""
    run_dir, dest = Path(run_dir), Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    for old in dest.iterdir():
        if old.is_file():
            old.unlink()
    for name in [*SUMMARY_FILES, *(p.name for p in run_dir.glob("*.log"))]:
        if (run_dir / name).is_file():
            shutil.copyfile(run_dir / name, dest / name)
    if (run_dir / EXAMPLES).is_file():
        with gzip.GzipFile(dest / EXAMPLES_GZ, "wb", mtime=0) as out:
            out.write(whole_lines(run_dir / EXAMPLES))
    return dest


def load_records(path: Path) -> list[dict]:
    """The good records of a JSONL file, the latest per example index.

    A corrupt line (a torn last line from a crash, or damage in the middle) is dropped with a warning naming its line,
    the good records around it are kept, and the file is rewritten without it, so the example is simply redone.
    """
    if not path.exists():
        return []
    raw = path.read_bytes()
    lines = raw.split(b"\n")
    complete, tail = lines[:-1], lines[-1]
    records, bad = [], []
    for number, line in enumerate(complete, 1):
        try:
            record = json.loads(line.decode("utf-8"))
            if not isinstance(record, dict):
                raise ValueError("not an object")
            records.append(record)
        except (ValueError, UnicodeDecodeError):
            bad.append(number)
    if tail.strip():
        bad.append(len(complete) + 1)
    if bad:
        log.warning(
            "%s: dropped %d corrupt line(s) (line %s); kept %d good records; those examples are redone",
            path,
            len(bad),
            ", ".join(map(str, bad[:10])),
            len(records),
        )
        atomic_write_text(path, "".join(json.dumps(r, sort_keys=True, default=str) + "\n" for r in records))
    latest = {}
    for record in records:
        latest[record.get("index", len(latest))] = record
    return [latest[i] for i in sorted(latest)]


@dataclass
class Resolved:
    """A model reference with, when it came from a training run folder, that run's config."""

    model: str
    train_config: dict | None = None
    run_path: Path | None = None


def resolve(path: str | Path) -> Resolved:
    """A run folder means its best/ model and its training config; a model folder inside a run (…/best) finds its
    run too; anything else is a model reference (alias, folder, hub name)."""
    candidate = Path(path)
    recover_folder(candidate / "best")  # a kill between the best model's two renames
    for run in (candidate, candidate.parent):
        saved = read_description(run) if (run / CONFIG).exists() else None
        if saved and saved.get("verb") == "train" and (run / "best" / CONFIG).exists():
            if run == candidate or candidate.name == "best":
                return Resolved(str(run / "best"), saved["config"], run)
    return Resolved(str(path))


def inherit(cfg, resolved: Resolved, defaults: dict):
    """`cfg` with its unset (None) keys taken from the training run, else from `defaults`; and what was taken."""
    inherited, train = {}, resolved.train_config or {}
    for key, default in defaults.items():
        if getattr(cfg, key) is None:
            value = train.get(key, default)
            if key == "precision" and value is None:
                value = "bf16" if train.get("bf16", True) else "fp32"  # runs written before `precision`
            setattr(cfg, key, value)
            inherited[key] = {"value": value, "from": "training run" if key in train else "default"}
    return cfg, inherited


def model_run_record(resolved: Resolved) -> dict | None:
    if resolved.run_path is None:
        return None
    return {"path": str(resolved.run_path), "config": resolved.train_config}


def default_output(resolved: Resolved, *parts) -> Path:
    name = "-".join(str(p) for p in parts if p not in (None, ""))
    if resolved.run_path is not None:
        return resolved.run_path / name
    return Path("runs") / f"{Path(resolved.model.rstrip('/')).name or 'model'}-{name}"


def attach_log(path: Path, name: str) -> None:
    """Log robustft's records to <run>/<name> (appended across resumes) and to the console."""
    logger = logging.getLogger("robustft")
    logger.setLevel(logging.INFO)
    for handler in list(logger.handlers):
        if getattr(handler, "_robustft_run", False):
            logger.removeHandler(handler)
            handler.close()
    file_handler = logging.FileHandler(Path(path) / name, encoding="utf-8")
    file_handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    file_handler._robustft_run = True
    logger.addHandler(file_handler)
    if not any(
        isinstance(h, logging.StreamHandler) and not isinstance(h, logging.FileHandler) for h in logger.handlers
    ):
        console = logging.StreamHandler()
        console.setFormatter(logging.Formatter("%(message)s"))
        logger.addHandler(console)


def detach_log() -> None:
    logger = logging.getLogger("robustft")
    for handler in list(logger.handlers):
        if getattr(handler, "_robustft_run", False):
            logger.removeHandler(handler)
            handler.close()
