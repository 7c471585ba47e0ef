"""An attack run is a folder: config.json (recipe config, hashes of every resource, model and data),
examples.jsonl (one line per example, appended and flushed as each finishes), metrics.json (TextAttack's
summary) and examples.csv. `resume=True` keeps the finished lines and attacks the rest (errored examples
again); a half-written last line from a crash is dropped. Per-example seeds depend only on (seed, index),
so a resumed run gives the same records as an uninterrupted one.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
import traceback
from pathlib import Path

from robustft import resources
from robustft.atomic import atomic_write_json
from robustft.attacks.results import ERROR, AttackRecord, format_summary, summarize, write_csv
from robustft.data.example import Example
from robustft.errors import ConfigError, RobustftError

log = logging.getLogger(__name__)

EXAMPLES, CONFIG, METRICS, CSV = "examples.jsonl", "config.json", "metrics.json", "examples.csv"


def config_hash(config: dict) -> str:
    """Hash of what determines the results (not versions or timings)."""
    keep = {k: v for k, v in config.items() if k not in ("versions", "hash", "started")}
    return hashlib.sha256(json.dumps(keep, sort_keys=True, default=str).encode()).hexdigest()


def hash_resources(files: dict[str, str]) -> dict[str, dict]:
    return {name: {"path": path, "sha256": resources.file_sha256(path)} for name, path in sorted(files.items())}


def examples_digest(examples: list[Example]) -> str:
    h = hashlib.sha256()
    for e in examples:
        h.update(json.dumps([e.id, e.text_a, e.text_b, e.label]).encode())
    return h.hexdigest()


def load_records(path: Path) -> list[AttackRecord]:
    """Complete records of a JSONL file, the latest per example; a torn last line (crash mid-write) is cut off."""
    records, good_bytes = [], 0
    with open(path, "rb") as f:
        for raw in f:
            if not raw.endswith(b"\n"):
                break
            try:
                records.append(AttackRecord.from_json(raw.decode("utf-8")))
            except (json.JSONDecodeError, TypeError, UnicodeDecodeError):
                break
            good_bytes += len(raw)
    latest = {r.index: r for r in records}  # a retried example's newer line wins
    records = [latest[i] for i in sorted(latest)]
    if good_bytes != path.stat().st_size:
        log.warning("%s: dropping a partial last line (%d bytes)", path, path.stat().st_size - good_bytes)
        with open(path, "r+b") as f:
            f.truncate(good_bytes)
    return records


def prepare_folder(out_dir: Path, config: dict, resume: bool) -> list[AttackRecord]:
    """Write config.json (or check it matches on resume) and return the records already done."""
    out_dir.mkdir(parents=True, exist_ok=True)
    config["hash"] = config_hash(config)
    examples_path, config_path = out_dir / EXAMPLES, out_dir / CONFIG
    if examples_path.exists() and not resume:
        raise ConfigError(f"{out_dir} already holds an attack run: pass --resume to continue it or choose "
                          f"another --out")
    if resume and config_path.exists():
        saved = json.loads(config_path.read_text(encoding="utf-8"))
        if saved.get("hash") != config["hash"]:
            changed = sorted(k for k in set(saved) | set(config)
                             if k not in ("hash", "versions", "started") and saved.get(k) != config.get(k))
            raise ConfigError(f"cannot resume {out_dir}: its settings differ ({', '.join(changed)}); "
                              f"resume with the same settings")
    else:
        atomic_write_json(config_path, config)
    return load_records(examples_path) if examples_path.exists() else []


def finish(out_dir: Path, records: list[AttackRecord], wall_seconds: float | None = None) -> dict:
    records = sorted(records, key=lambda r: r.index)
    summary = summarize(records)
    if wall_seconds is not None:
        summary["wall_seconds_this_session"] = round(wall_seconds, 2)
    atomic_write_json(out_dir / METRICS, summary)
    write_csv(records, out_dir / CSV)
    return summary


def _postfix(records: list[AttackRecord]) -> dict:
    s = summarize(records)
    fmt = lambda v: "-" if v is None else f"{v:.1f}"
    return {"acc": fmt(s["accuracy_under_attack"]), "succ": fmt(s["attack_success_rate"]),
            "q": fmt(s["avg_num_queries"])}


def run_attack(attack, examples: list[Example], out_dir: Path, config: dict, seed: int = 0, resume: bool = False,
               progress: bool = True, first: int | None = None) -> tuple[list[AttackRecord], dict]:
    """Attack every example not yet in the folder, appending each record as it finishes.

    `first` stops after the first `first` examples of the sample (a later resume can do the rest);
    metrics.json then covers the records done so far.
    """
    out_dir = Path(out_dir)
    done = prepare_folder(out_dir, config, resume)
    records = [r for r in done if r.result != ERROR]  # errored examples are tried again on resume
    finished = {r.index for r in records}
    stop = len(examples) if first is None else min(first, len(examples))
    todo = [(i, e) for i, e in enumerate(examples[:stop]) if i not in finished]
    start = time.perf_counter()
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=stop, initial=len(finished & set(range(stop))), desc=config.get("recipe", "attack"), unit="ex",
                   dynamic_ncols=True)
    with open(out_dir / EXAMPLES, "a", encoding="utf-8") as f:
        for index, example in todo:
            try:
                record = attack.run(example, index, seed)
            except RobustftError:
                raise  # a missing resource or bad setting stops the run with its message
            except Exception as exc:  # one bad example must not lose the run: record it and go on
                log.error("example %d (%s) failed:\n%s", index, example.id, traceback.format_exc())
                record = AttackRecord(index=index, id=example.id, label=example.label, result=ERROR,
                                      original=example.field(attack.field) or "", adversarial="",
                                      perturbed_field=attack.field, reason=f"{type(exc).__name__}: {exc}")
            f.write(record.to_json() + "\n")
            f.flush()
            os.fsync(f.fileno())
            records.append(record)
            if bar is not None:
                bar.update(1)
                bar.set_postfix(_postfix(records), refresh=False)
    if bar is not None:
        bar.close()
    summary = finish(out_dir, records, time.perf_counter() - start)
    return sorted(records, key=lambda r: r.index), summary


def write_records(out_dir: Path, config: dict, records: list[AttackRecord]) -> dict:
    """For attacks that return all records at once (the white-box ASCC attack)."""
    out_dir = Path(out_dir)
    prepare_folder(out_dir, config, resume=False)
    with open(out_dir / EXAMPLES, "w", encoding="utf-8") as f:
        for r in records:
            f.write(r.to_json() + "\n")
    return finish(out_dir, records)


__all__ = ["run_attack", "write_records", "load_records", "hash_resources", "examples_digest", "format_summary"]
