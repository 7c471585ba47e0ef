"""A user's own labelled file (CSV, TSV or JSON lines) read into rows, its text and label columns named or
detected, its labels mapped to ids.

Every problem stops with `DataFormatError(path, line, problem)`, as the readers of the offline files do: a row
with the wrong number of fields, invalid JSON, an empty text or label, a bad encoding, a label outside the list.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from robustft.data.example import Example
from robustft.data.json_document import read_text_strict
from robustft.data.readers import BOM, check_text, iter_lines, json_object_line, to_label
from robustft.errors import ConfigError, DataFormatError

# The roles of a column: a text, the second text of a pair, the label (`--data_columns.text review`).
ROLES = ("text", "text_pair", "label")
# Column names tried, in order, when a role is not named: the spellings of GLUE, SNLI, IMDB and most datasets.
PAIR_NAMES = (
    ("premise", "hypothesis"),
    ("sentence1", "sentence2"),
    ("question1", "question2"),
    ("question", "sentence"),
    ("text_a", "text_b"),
    ("text", "text_pair"),
)
TEXT_NAMES = ("text", "sentence", "review", "content", "document", "text_a", "tweet", "comment")
LABEL_NAMES = ("label", "labels", "gold_label", "class", "sentiment", "target", "category")
SUFFIXES = {".csv": ",", ".tsv": "\t", ".tab": "\t", ".jsonl": None, ".json": None}


@dataclass(frozen=True)
class Rows:
    """What a file holds: its column names and (line, record) per row, records keyed by column name."""

    path: Path | str  # a file, or where a dataset split came from ('glue/sst2[train]')
    columns: tuple[str, ...]
    rows: list[tuple[int, dict]]
    id_prefix: str = ""  # example ids are '<id_prefix>:<line>' (default: the file's name)


def read_rows(path: Path) -> Rows:
    """The rows of a .csv, .tsv or .jsonl file (JSON lines also as .json; JSON lines may be gzipped)."""
    suffixes = [s for s in path.suffixes if s != ".gz"]
    suffix = suffixes[-1].lower() if suffixes else ""
    if suffix not in SUFFIXES or (path.suffix == ".gz" and SUFFIXES[suffix] is not None):
        raise ConfigError(f"data: {path} is not a .csv, .tsv or .jsonl file (JSON lines may be .jsonl.gz)")
    if not path.is_file():
        raise ConfigError(f"data: {path} does not exist")
    if SUFFIXES[suffix] is None:
        return _json_lines(path)
    return _delimited(path, SUFFIXES[suffix])


def _delimited(path: Path, delimiter: str) -> Rows:
    """A headed CSV (quoted fields may span lines: each row is named by the line it starts on) or TSV (no quoting:
    a tab always separates)."""
    quoting = csv.QUOTE_MINIMAL if delimiter == "," else csv.QUOTE_NONE
    text = read_text_strict(path).removeprefix(BOM)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, quoting=quoting)
    header, rows, start = None, [], 1
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:  # e.g. an unclosed quote running into the field size limit
            raise DataFormatError(path, start, f"malformed row ({exc}; an unclosed quote?)") from None
        if header is None:
            header = [c.strip() for c in cells]
            if not any(header):
                raise DataFormatError(path, start, "empty header line, expected column names")
            twice = next((name for i, name in enumerate(header) if name in header[:i]), None)
            if twice is not None:  # zip into a dict would keep the last of them without a word
                raise DataFormatError(path, start, f"column '{twice}' appears twice in the header; rename one")
        elif not cells:
            raise DataFormatError(path, start, "empty line")
        elif len(cells) != len(header):
            sep = "comma" if delimiter == "," else "tab"
            raise DataFormatError(path, start, f"{len(cells)} {sep}-separated fields, the header has {len(header)}")
        else:
            rows.append((start, dict(zip(header, cells, strict=True))))
        start = reader.line_num + 1
    if header is None:
        raise DataFormatError(path, 1, "empty file, expected a header line")
    return Rows(path, tuple(header), rows)


def _json_lines(path: Path) -> Rows:
    rows = []
    for number, line in iter_lines(path):
        if not line.strip():
            raise DataFormatError(path, number, "empty line")
        rows.append((number, json_object_line(path, number, line)))
    columns = tuple(rows[0][1]) if rows else ()
    return Rows(path, columns, rows)


def detect_columns(columns, given: dict, where) -> dict[str, str | None]:
    """role -> column: the roles `given` names, the others found among the usual names (a pair first, so a file
    with premise and hypothesis is a pair task). A named column that is not there is an error, as is no text or
    no label column."""
    unknown = sorted(set(given) - set(ROLES))
    if unknown:
        raise ConfigError(f"data_columns: unknown role(s) {unknown}; the roles are {', '.join(ROLES)}")
    for role, name in given.items():
        if name is not None and name not in columns:
            raise ConfigError(f"data_columns.{role}: {where} has no column {name!r} (it has {list(columns)})")
    chosen = {role: given.get(role) for role in ROLES}
    if chosen["text"] is None:
        pair = next((p for p in PAIR_NAMES if p[0] in columns and p[1] in columns), None)
        if pair and "text_pair" not in given:
            chosen["text"], chosen["text_pair"] = pair
        else:
            chosen["text"] = next((c for c in TEXT_NAMES if c in columns), None)
    if chosen["label"] is None:
        chosen["label"] = next((c for c in LABEL_NAMES if c in columns), None)
    for role, hint in (("text", TEXT_NAMES), ("label", LABEL_NAMES)):
        if chosen[role] is None:
            raise ConfigError(
                f"data_columns.{role}: {where} has no {role} column among {list(hint)} (it has {list(columns)}); "
                f"name it with --data_columns.{role} COLUMN"
            )
    return chosen


def label_names(values) -> tuple[str, ...]:
    """The distinct labels in id order: whole numbers by value (0, 1, ..., 10), anything else alphabetically."""
    distinct = set(values)
    if all(v.lstrip("-").isdigit() for v in distinct):
        return tuple(sorted(distinct, key=int))
    return tuple(sorted(distinct))


def label_map(names) -> dict[str, int]:
    """Label text -> id: a label name, or an id written as a number (a file of 0/1 with names given)."""
    return {**{str(i): i for i in range(len(names))}, **{n: i for i, n in enumerate(names)}}


def raw_label(path, line: int, record: dict, column: str) -> str:
    """A row's label as text ('1' for 1 and '1'): a number, a string or a bool-free scalar, not empty."""
    if column not in record:
        raise DataFormatError(path, line, f"missing field {column!r}")
    value = record[column]
    if isinstance(value, bool) or not isinstance(value, int | str) or not str(value).strip():
        raise DataFormatError(path, line, f"label column {column!r}: expected a label, found {value!r}")
    return str(value).strip()


def to_examples(rows: Rows, columns: dict, names) -> list[Example]:
    """Every row as an Example, each text checked and each label mapped."""
    mapping = label_map(names)
    out = []
    for line, record in rows.rows:
        texts = {}
        for role, field in (("text", "text_a"), ("text_pair", "text_b")):
            column = columns[role]
            if column is None:
                continue
            if column not in record:
                raise DataFormatError(rows.path, line, f"missing field {column!r}")
            texts[field] = check_text(rows.path, line, record[column], column)
        label = to_label(rows.path, line, raw_label(rows.path, line, record, columns["label"]), mapping)
        out.append(Example(id=f"{rows.id_prefix or Path(rows.path).name}:{line}", label=label, **texts))
    return out
