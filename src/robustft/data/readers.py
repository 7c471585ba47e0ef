"""Validating readers for the offline file formats.

Every problem is reported as `DataFormatError(path, line, problem)`: a wrong column count, an unknown
label, an empty or non-string text, a NUL byte, a bad encoding or a damaged .gz stops the run with the
file and line, never a silent skip.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from robustft.data.example import Example
from robustft.data.json_document import JsonDocument, kind, read_text_strict
from robustft.errors import DataFormatError

BOM = "\ufeff"  # a UTF-8 byte order mark (Excel's "CSV UTF-8"): not text; it made the first column "\ufefftext"


def iter_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(1-based line number, text without line end), decoding UTF-8 strictly line by line."""
    opener = gzip.open if path.suffix == ".gz" else open
    number = 0
    try:
        with opener(path, "rb") as f:
            for number, raw in enumerate(f, start=1):
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise DataFormatError(path, number, f"not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
                if "\x00" in text:
                    raise DataFormatError(path, number, "NUL byte (binary or corrupt file)")
                if number == 1:
                    text = text.removeprefix(BOM)
                yield number, text.rstrip("\r\n")
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:  # truncated, not gzip, or corrupt compressed data
        raise DataFormatError(path, number + 1, f"damaged gzip file ({exc}); fetch it again") from None


def check_text(path: Path, line: int | None, text, field: str) -> str:
    """A non-empty string without NUL characters, stripped."""
    if text is not None and not isinstance(text, str):
        raise DataFormatError(path, line, f"field '{field}' must be a string, found {kind(text)}")
    if text is None or not text.strip():
        raise DataFormatError(path, line, f"empty text in field '{field}'")
    if "\x00" in text:
        raise DataFormatError(path, line, f"NUL character in field '{field}'")
    return text.strip()


def to_label(path: Path, line: int | None, raw, label_map: dict[str, int]) -> int:
    key = str(raw).strip()
    if isinstance(raw, bool | dict | list) or raw is None or key not in label_map:
        raise DataFormatError(path, line, f"unknown label {raw!r}; expected one of {sorted(label_map)}")
    return label_map[key]


def read_tsv(
    path: Path, columns: dict[str, str], label_map: dict[str, int], repeats: tuple[str, int] | None = None
) -> list[Example]:
    """A TSV with a header; `columns` maps Example fields (text_a, text_b, label) to header names.

    Every row has the header's number of fields, except that `repeats=(name, k)` lets the column `name`
    be followed by up to k more values (SNLI rows carry label2..label5 after label1 when five annotators
    voted); columns after it are then read from the end of the row.
    """
    lines = iter_lines(path)
    try:
        _, header_line = next(lines)
    except StopIteration:
        raise DataFormatError(path, 1, "empty file, expected a header") from None
    header = header_line.split("\t")
    index = {}
    for field, name in columns.items():
        if name not in header:
            raise DataFormatError(path, 1, f"missing column '{name}' (header has {header})")
        index[field] = header.index(name)
    extra_after, extra_max = (header.index(repeats[0]), repeats[1]) if repeats and repeats[0] in header else (0, 0)
    out = []
    for number, line in lines:
        if not line.strip():
            raise DataFormatError(path, number, "empty line")
        cells = line.split("\t")
        extra = len(cells) - len(header)
        if not 0 <= extra <= extra_max:  # more cells would silently cut a text that holds a tab
            raise DataFormatError(path, number, f"{len(cells)} tab-separated fields, header has {len(header)}")
        at = {f: i if i <= extra_after else i + extra for f, i in index.items()}
        texts = {f: check_text(path, number, cells[i], columns[f]) for f, i in at.items() if f != "label"}
        label = to_label(path, number, cells[at["label"]], label_map)
        out.append(Example(id=f"{path.name}:{number}", label=label, **texts))
    return out


def read_label_space_text(path: Path, label_map: dict[str, int], sep: str | None = None) -> list[Example]:
    """TextFooler sets: `label text` per line, or `label<TAB>premise<TAB>hypothesis` with sep='\\t'."""
    out = []
    for number, line in iter_lines(path):
        if not line.strip():
            raise DataFormatError(path, number, "empty line")
        if sep == "\t":
            cells = line.split("\t")
            if len(cells) != 3:
                raise DataFormatError(
                    path, number, f"expected label<TAB>premise<TAB>hypothesis, got {len(cells)} fields"
                )
            fields = {"text_a": (cells[1], "premise"), "text_b": (cells[2], "hypothesis")}
        else:
            head, _, text = line.partition(" ")
            cells, fields = [head], {"text_a": (text, "text")}
        label = to_label(path, number, cells[0], label_map)  # the label is checked before the texts
        texts = {key: check_text(path, number, text, name) for key, (text, name) in fields.items()}
        out.append(Example(id=f"{path.name}:{number}", label=label, **texts))
    return out


def read_lines_as_class(path: Path, label: int) -> list[Example]:
    """One example per line, all of one class (MR's .pos / .neg files)."""
    return [
        Example(id=f"{path.name}:{n}", label=label, text_a=check_text(path, n, line, "sentence"))
        for n, line in iter_lines(path)
    ]


def read_parallel(paths: tuple[Path, Path, Path], label_map: dict[str, int]) -> list[Example]:
    """SNLI's parallel s1 / s2 / labels files, one example per line in each."""
    columns = [list(iter_lines(p)) for p in paths]
    lengths = [len(c) for c in columns]
    for path, length in zip(paths, lengths, strict=True):
        if length != lengths[-1]:
            other = f"its parallel file {paths[-1].name} has {lengths[-1]}"
            raise DataFormatError(path, None, f"{length} lines, but {other}")
    out = []
    for (n, s1), (_, s2), (_, lab) in zip(*columns, strict=False):
        out.append(
            Example(
                id=f"{paths[2].name}:{n}",
                label=to_label(paths[2], n, lab, label_map),
                text_a=check_text(paths[0], n, s1, "premise"),
                text_b=check_text(paths[1], n, s2, "hypothesis"),
            )
        )
    return out


class DuplicateKey(ValueError):
    pass


def unique_keys(pairs: list[tuple[str, Any]]) -> dict:
    """A JSON object whose keys are distinct: json.loads keeps the last of a repeated key without a word."""
    seen = set()
    for key, _ in pairs:
        if key in seen:
            raise DuplicateKey(key)
        seen.add(key)
    return dict(pairs)


def json_object_line(path: Path, number: int, line: str, expected: str = "a JSON object per line") -> dict:
    """One line of a JSON-lines data file as a dict, or a DataFormatError naming the file and line."""
    try:
        record = json.loads(line, object_pairs_hook=unique_keys)
    except DuplicateKey as exc:
        raise DataFormatError(path, number, f"key '{exc}' appears twice in one object; which one is meant?") from None
    except json.JSONDecodeError as exc:
        raise DataFormatError(path, number, f"invalid JSON: {exc.msg}") from None
    except RecursionError:
        raise DataFormatError(path, number, "invalid JSON: nested too deeply") from None
    if not isinstance(record, dict):
        raise DataFormatError(path, number, f"expected {expected}, found {kind(record)}")
    return record


def read_jsonl(path: Path, label_map: dict[str, int], keep=None, required=("text", "label")) -> list[Example]:
    """JSON lines with `text` and `label` (IMDB); `keep(record)` selects a split (a ValueError it raises
    is reported with the file and line)."""
    out = []
    for number, line in iter_lines(path):
        record = json_object_line(path, number, line, f"a JSON object with {list(required)}")
        missing = [key for key in required if key not in record]
        if missing:
            raise DataFormatError(path, number, f"missing field(s) {missing}")
        try:
            if keep is not None and not keep(record):
                continue
        except ValueError as exc:
            raise DataFormatError(path, number, str(exc)) from None
        out.append(
            Example(
                id=str(record.get("id", number)),
                label=to_label(path, number, record["label"], label_map),
                text_a=check_text(path, number, record["text"], "text"),
            )
        )
    return out


def read_json_subset(path: Path, label_map: dict[str, int], pair: bool) -> list[Example]:
    """glue_subsets: one JSON object {id: {text_a, text_b, label}}; `pair` says whether text_b must be there."""
    document = JsonDocument(path)
    out = []
    for key, record, start in document.top_object("{id: {text_a, text_b, label}}"):
        line = document.line(start)
        where = f"example id {key}"
        expected = ["text_a", "text_b", "label"] if pair else ["text_a", "label"]
        if not isinstance(record, dict):
            raise DataFormatError(path, line, f"{where}: expected an object with {expected}, found {kind(record)}")
        missing = [f for f in expected if f not in record]
        if missing:
            task_kind = "a pair task" if pair else "a single-text task"
            raise DataFormatError(path, line, f"{where}: missing field(s) {missing} ({task_kind})")
        if not pair and record.get("text_b") is not None:
            raise DataFormatError(path, line, f"{where}: has a text_b, but this is a single-text task")
        out.append(
            Example(
                id=str(key),
                label=to_label(path, line, record["label"], label_map),
                text_a=check_text(path, line, record["text_a"], f"{where} text_a"),
                text_b=check_text(path, line, record["text_b"], f"{where} text_b") if pair else None,
            )
        )
    return out


def read_ag_csv(path: Path) -> list[Example]:
    """AG News CSV: "class(1-4)","title","description"; title and description joined."""
    out = []
    reader = csv.reader(io.StringIO(read_text_strict(path), newline=""))
    start = 1
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return out
        except csv.Error as exc:  # e.g. an unclosed quote running into the field size limit
            raise DataFormatError(path, start, f"malformed CSV ({exc}; an unclosed quote?)") from None
        if len(row) != 3:
            raise DataFormatError(path, start, f"expected 3 CSV fields, got {len(row)}")
        label = to_label(path, start, row[0], {"1": 0, "2": 1, "3": 2, "4": 3})
        text = check_text(path, start, f"{row[1]} {row[2]}".replace("\\", " "), "title+description")
        out.append(Example(id=f"{path.name}:{start}", label=label, text_a=text))
        start = reader.line_num + 1


def read_advglue(path: Path, key: str, fields: tuple[str, ...], label_map: dict[str, int]) -> list[Example]:
    """AdvGLUE dev: one JSON object {task: [{idx, <fields>, label}]}."""
    document = JsonDocument(path)
    tasks = {name: start for name, _, start in document.top_object("{task: [records]}")}
    if key not in tasks:
        raise DataFormatError(path, None, f"no task '{key}' (has {sorted(tasks)})")
    out = []
    for i, (record, start) in enumerate(document.array_at(tasks[key], f"a list of records for '{key}'")):
        line, where = document.line(start), f"{key}[{i}]"
        if not isinstance(record, dict):
            expected = [*fields, "label"]
            raise DataFormatError(path, line, f"{where}: expected an object with {expected}, found {kind(record)}")
        missing = [f for f in (*fields, "label") if f not in record]
        if missing:
            raise DataFormatError(path, line, f"{where}: missing field(s) {missing}")
        texts = [check_text(path, line, record[f], f"{where}.{f}") for f in fields]
        out.append(
            Example(
                id=f"{key}:{record.get('idx', i)}",
                label=to_label(path, line, record["label"], label_map),
                text_a=texts[0],
                text_b=texts[1] if len(texts) > 1 else None,
            )
        )
    return out
