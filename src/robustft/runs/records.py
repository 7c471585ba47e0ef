"""Reading a run's JSON and JSONL files, with the one rule for damaged per-example lines.

The rule (`parse_lines`): a line is a record when it is a JSON object; blank lines are nothing; the last line
without its newline that is not a record is *torn* (cut by a kill, or still being written by a running process);
any other line that is not a record is *damaged*. What a caller does with them depends on whether it owns the
folder: the process that holds the run's lock drops both and rewrites the file (`load_records`: the examples are
simply redone); anyone else only reads (`read_records`): a torn line is left out, and a damaged one is an error
(a finished run's file is corrupt) or, for an estimate, left out with a warning.
"""

from __future__ import annotations

import gzip
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

from robustft.atomic import atomic_write_text
from robustft.errors import DataFormatError

log = logging.getLogger("robustft.runs")


@dataclass
class Lines:
    records: list[dict] = field(default_factory=list)
    damaged: list[int] = field(default_factory=list)  # line numbers (1-based) of complete lines that are no record
    torn: int | None = None  # the line number of a torn last line


def _record(line: bytes) -> dict | None:
    try:
        record = json.loads(line.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return None
    return record if isinstance(record, dict) else None


def parse_lines(data: bytes) -> Lines:
    """Split JSONL bytes into records, damaged lines and a torn last line (the rule in the module docstring)."""
    *complete, tail = data.split(b"\n")
    out = Lines()
    for number, line in enumerate([*complete, tail], 1):
        if not line.strip():
            continue
        record = _record(line)
        if record is not None:
            out.records.append(record)
        elif number == len(complete) + 1:
            out.torn = number
        else:
            out.damaged.append(number)
    return out


def _read_bytes(path: Path) -> bytes:
    return gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()


def dumps_lines(records: list[dict]) -> str:
    return "".join(json.dumps(r, sort_keys=True, default=str) + "\n" for r in records)


def load_records(path: Path) -> list[dict]:
    """The good records of a run's own JSONL file, the latest per example index, for the process that holds the
    run's lock: a torn or damaged line is dropped with a warning naming it, the good records around it are kept,
    and the file is rewritten without it, so the example is simply redone."""
    path = Path(path)
    if not path.exists():
        return []
    raw = path.read_bytes()
    lines = parse_lines(raw)
    bad = lines.damaged + ([lines.torn] if lines.torn else [])
    if bad:
        log.warning(
            "%s: dropped %d corrupt line(s) (line %s); kept %d good records; those examples are redone",
            path,
            len(bad),
            ", ".join(map(str, bad[:10])),
            len(lines.records),
        )
    if bad or (raw and not raw.endswith(b"\n")):  # the next append must start on a line of its own
        atomic_write_text(path, dumps_lines(lines.records))
    latest = {}
    for record in lines.records:
        latest[record.get("index", len(latest))] = record
    return [latest[i] for i in sorted(latest)]


def read_records(path: Path, strict: bool = True) -> list[dict]:
    """The records of a JSONL file (gzipped too) another process may own, read without changing it: a torn last
    line is left out (it may still be being written). A damaged line raises DataFormatError naming it (`strict`),
    or is left out with a warning."""
    path = Path(path)
    lines = parse_lines(_read_bytes(path))
    if lines.damaged and strict:
        raise DataFormatError(path, lines.damaged[0], "not a JSON object (a damaged line)")
    if lines.damaged:
        log.warning("%s: left out %d damaged line(s) (line %s)", path, len(lines.damaged), lines.damaged[0])
    return lines.records


def whole_lines(path: Path) -> bytes:
    """A per-example log up to its last complete line, read without touching it (a running job appends to it):
    a line torn by a kill, or being written now, stays behind."""
    data = Path(path).read_bytes()
    return data[: data.rfind(b"\n") + 1]


def read_json(path: Path) -> dict | None:
    """A JSON file's content, or None when it is missing or unreadable (a run still being set up)."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return None


def load_json(path: Path) -> dict:
    """A JSON file a finished run must have intact: DataFormatError naming it and the line when it is not."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataFormatError(path, exc.lineno, f"not valid JSON: {exc.msg}") from None
    except UnicodeDecodeError:
        raise DataFormatError(path, None, "not UTF-8 text") from None
