"""Validating readers for the offline file formats.

Every problem is reported as `DataFormatError(path, line, problem)`: a wrong column, an unknown
label, an empty text or a bad encoding stops the run with the file and line, never a silent skip.
"""

from __future__ import annotations

import csv
import gzip
import json
from collections.abc import Iterator
from pathlib import Path

from robustft.data.example import Example
from robustft.errors import DataFormatError


def iter_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(1-based line number, text without line end), decoding UTF-8 strictly line by line."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        for number, raw in enumerate(f, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise DataFormatError(path, number, f"not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
            yield number, text.rstrip("\r\n")


def check_text(path: Path, line: int, text: str | None, field: str) -> str:
    if text is None or not str(text).strip():
        raise DataFormatError(path, line, f"empty text in field '{field}'")
    return str(text).strip()


def to_label(path: Path, line: int, raw, label_map: dict[str, int]) -> int:
    key = str(raw).strip()
    if key not in label_map:
        raise DataFormatError(path, line, f"unknown label {key!r}; expected one of {sorted(label_map)}")
    return label_map[key]


def read_tsv(path: Path, columns: dict[str, str], label_map: dict[str, int]) -> list[Example]:
    """A TSV with a header; `columns` maps Example fields (text_a, text_b, label) to header names."""
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
    out = []
    for number, line in lines:
        if not line.strip():
            raise DataFormatError(path, number, "empty line")
        cells = line.split("\t")
        if len(cells) < len(header):
            raise DataFormatError(path, number, f"{len(cells)} columns, header has {len(header)}")
        texts = {f: check_text(path, number, cells[i], columns[f]) for f, i in index.items() if f != "label"}
        label = to_label(path, number, cells[index["label"]], label_map)
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
            label = to_label(path, number, cells[0], label_map)
            out.append(
                Example(
                    id=f"{path.name}:{number}",
                    label=label,
                    text_a=check_text(path, number, cells[1], "premise"),
                    text_b=check_text(path, number, cells[2], "hypothesis"),
                )
            )
        else:
            head, _, text = line.partition(" ")
            label = to_label(path, number, head, label_map)
            out.append(Example(id=f"{path.name}:{number}", label=label, text_a=check_text(path, number, text, "text")))
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
    if len({len(c) for c in columns}) != 1:
        raise DataFormatError(paths[2], None, f"parallel files differ in length: {[len(c) for c in columns]}")
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


def read_jsonl(path: Path, label_map: dict[str, int], keep=None) -> list[Example]:
    """JSON lines with `text` and `label` (IMDB); `keep(record)` selects a split."""
    out = []
    for number, line in iter_lines(path):
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataFormatError(path, number, f"invalid JSON: {exc.msg}") from None
        for key in ("text", "label"):
            if key not in record:
                raise DataFormatError(path, number, f"missing field '{key}'")
        if keep is not None and not keep(record):
            continue
        out.append(
            Example(
                id=str(record.get("id", number)),
                label=to_label(path, number, record["label"], label_map),
                text_a=check_text(path, number, record["text"], "text"),
            )
        )
    return out


def read_json_subset(path: Path, label_map: dict[str, int]) -> list[Example]:
    """glue_subsets: one JSON object {id: {text_a, text_b, label}}; errors name the example id."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataFormatError(path, getattr(exc, "lineno", None), f"unreadable JSON: {exc}") from None
    out = []
    for key, record in data.items():
        where = f"example id {key}"
        if not isinstance(record, dict) or "text_a" not in record or "label" not in record:
            raise DataFormatError(path, None, f"{where}: expected an object with text_a and label")
        label = to_label(path, None, record["label"], label_map) if str(record["label"]) in label_map else None
        if label is None:
            raise DataFormatError(
                path, None, f"{where}: unknown label {record['label']!r}; expected one of {sorted(label_map)}"
            )
        text_b = record.get("text_b")
        out.append(
            Example(
                id=str(key),
                label=label,
                text_a=check_text(path, None, record["text_a"], f"{where} text_a"),
                text_b=None if text_b is None else check_text(path, None, text_b, f"{where} text_b"),
            )
        )
    return out


def read_ag_csv(path: Path) -> list[Example]:
    """AG News CSV: "class(1-4)","title","description"; title and description joined."""
    out = []
    with open(path, encoding="utf-8", newline="") as f:
        for number, row in enumerate(csv.reader(f), start=1):
            if len(row) != 3:
                raise DataFormatError(path, number, f"expected 3 CSV fields, got {len(row)}")
            label = to_label(path, number, row[0], {"1": 0, "2": 1, "3": 2, "4": 3})
            text = check_text(path, number, f"{row[1]} {row[2]}".replace("\\", " "), "title+description")
            out.append(Example(id=f"{path.name}:{number}", label=label, text_a=text))
    return out


def read_advglue(path: Path, key: str, fields: tuple[str, ...], label_map: dict[str, int]) -> list[Example]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if key not in data:
        raise DataFormatError(path, None, f"no task '{key}' (has {sorted(data)})")
    out = []
    for i, record in enumerate(data[key]):
        where = f"{key}[{i}]"
        missing = [f for f in (*fields, "label") if f not in record]
        if missing:
            raise DataFormatError(path, None, f"{where}: missing field(s) {missing}")
        texts = [check_text(path, None, record[f], f"{where}.{f}") for f in fields]
        out.append(
            Example(
                id=f"{key}:{record.get('idx', i)}",
                label=to_label(path, None, record["label"], label_map),
                text_a=texts[0],
                text_b=texts[1] if len(texts) > 1 else None,
            )
        )
    return out
