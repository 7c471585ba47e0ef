"""A catalogue of malformed data files, each built as a small copy of the real file layout.

`build(case, real_root, tmp_root)` copies the first lines of every file the case's split reads from the
real data root into `tmp_root` (same relative paths), then damages one of them. Point $ROBUSTFT_DATA at
`tmp_root` and every case must stop with a `RobustftError` naming the damaged file (and its line where a
line exists). Used by tests/test_bad_inputs.py and scripts/probe_bad_inputs.py; never writes to the real
data root.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

HEAD_LINES = 40  # copies keep the first lines only: small, fast, still the real layout


@dataclass(frozen=True)
class BadFile:
    name: str
    task: str
    split: str
    target: str  # the damaged file, relative to the data root
    damage: Callable[[bytes], bytes]  # applied to the (decompressed, unless raw) bytes of the copy
    line: int | None = None  # the line the error must name, when the damage has one
    raw: bool = False  # damage the compressed bytes of a .gz file
    whole: bool = False  # copy the whole file, not its first lines (JSON documents)


# --- damage helpers: bytes -> bytes --------------------------------------------------------------


def set_line(number: int, text: bytes) -> Callable[[bytes], bytes]:
    def damage(data: bytes) -> bytes:
        lines = data.split(b"\n")
        lines[number - 1] = text
        return b"\n".join(lines)

    return damage


def edit_line(number: int, fn: Callable[[bytes], bytes]) -> Callable[[bytes], bytes]:
    def damage(data: bytes) -> bytes:
        lines = data.split(b"\n")
        lines[number - 1] = fn(lines[number - 1])
        return b"\n".join(lines)

    return damage


def keep_lines(count: int) -> Callable[[bytes], bytes]:
    return lambda data: b"".join(data.splitlines(keepends=True)[:count])


def cut_at(fraction: float) -> Callable[[bytes], bytes]:
    return lambda data: data[: int(len(data) * fraction)]


def edit_json(fn: Callable[[object], object]) -> Callable[[bytes], bytes]:
    """Parse, change, and write back with indent 2 (the layout of the real files)."""
    return lambda data: (json.dumps(fn(json.loads(data)), indent=2) + "\n").encode()


def edit_jsonl(number: int, fn: Callable[[dict], object]) -> Callable[[bytes], bytes]:
    return edit_line(number, lambda line: json.dumps(fn(json.loads(line))).encode())


def without(key: str) -> Callable[[dict], dict]:
    return lambda record: {k: v for k, v in record.items() if k != key}


def with_value(key: str, value) -> Callable[[dict], dict]:
    return lambda record: {**record, key: value}


def advglue_record(task: str, index: int, fn: Callable[[dict], object]) -> Callable[[object], object]:
    def change(data):
        data[task][index] = fn(data[task][index])
        return data

    return change


def subset_record(key: str, fn: Callable[[dict], object]) -> Callable[[object], object]:
    def change(data):
        data[key] = fn(data[key])
        return data

    return change


BAD_UTF8 = b"caf\xe9 \xff"
LONG_FIELD = b'"2","an unclosed quote swallows the rest of the file,' + b"x" * 140_000 + b'"'

# --- the catalogue -------------------------------------------------------------------------------

SST_DEV = "sst2/dev.tsv"
RTE_DEV = "rte/dev.tsv"
QNLI_DEV = "qnli/glue_dev.tsv"
IMDB_TEST = "imdb/test.jsonl.gz"
IMDB_TRAIN = "imdb/train.jsonl.gz"
ADVGLUE = "advglue/dev.json"
QQP_DEV = "glue_subsets/QQP/dev.json"
SST_SUBSET = "glue_subsets/SST-2/dev.json"
AG = "ag_news/test.csv"
MR_POS = "mr/rt-polarity.pos"
SNLI_S2 = "snli/s2.dev"
TF_MR = "textfooler/mr"
TF_SNLI = "textfooler/snli"

CASES: list[BadFile] = [
    # headed TSV (SST-2, RTE, QNLI)
    BadFile("tsv more fields than header", "sst2", "dev", SST_DEV, edit_line(3, lambda x: x + b"\tstray field"), 3),
    BadFile("tsv pair more fields", "qnli", "dev", QNLI_DEV, edit_line(2, lambda x: x + b"\textra"), 2),
    BadFile("tsv fewer fields", "sst2", "dev", SST_DEV, set_line(4, b"1"), 4),
    BadFile("tsv unknown label", "sst2", "dev", SST_DEV, set_line(2, b"7\tfine text"), 2),
    BadFile("tsv empty text", "sst2", "dev", SST_DEV, set_line(2, b"1\t   "), 2),
    BadFile("tsv blank line", "sst2", "dev", SST_DEV, set_line(5, b""), 5),
    BadFile("tsv bad utf-8", "sst2", "dev", SST_DEV, set_line(6, b"1\t" + BAD_UTF8), 6),
    BadFile("tsv NUL byte", "sst2", "dev", SST_DEV, edit_line(7, lambda x: x[:5] + b"\x00" + x[5:]), 7),
    BadFile("tsv missing column", "sst2", "dev", SST_DEV, set_line(1, b"label\ttext"), 1),
    BadFile("tsv empty file", "sst2", "dev", SST_DEV, lambda data: b""),
    BadFile("tsv header only (empty split)", "sst2", "dev", SST_DEV, keep_lines(1)),
    BadFile(
        "tsv pair empty second text",
        "rte",
        "dev",
        RTE_DEV,
        edit_line(3, lambda x: b"\t".join([x.split(b"\t")[0], b" ", *x.split(b"\t")[2:]])),
        3,
    ),
    # gzipped JSON lines (IMDB)
    BadFile("jsonl null line", "imdb", "test", IMDB_TEST, set_line(3, b"null"), 3),
    BadFile("jsonl number line", "imdb", "test", IMDB_TEST, set_line(4, b"42"), 4),
    BadFile("jsonl list line", "imdb", "test", IMDB_TEST, set_line(5, b'["text", "label"]'), 5),
    BadFile("jsonl string line", "imdb", "test", IMDB_TEST, set_line(5, b'"text label"'), 5),
    BadFile("jsonl invalid json", "imdb", "test", IMDB_TEST, edit_line(2, lambda x: x[:-3]), 2),
    BadFile("jsonl missing text", "imdb", "test", IMDB_TEST, edit_jsonl(6, without("text")), 6),
    BadFile("jsonl text is a number", "imdb", "test", IMDB_TEST, edit_jsonl(6, with_value("text", 5)), 6),
    BadFile("jsonl text null", "imdb", "test", IMDB_TEST, edit_jsonl(6, with_value("text", None)), 6),
    BadFile("jsonl unknown label", "imdb", "test", IMDB_TEST, edit_jsonl(7, with_value("label", 5)), 7),
    BadFile("jsonl escaped NUL in text", "imdb", "test", IMDB_TEST, edit_jsonl(8, with_value("text", "a\x00b")), 8),
    BadFile("jsonl raw NUL byte", "imdb", "test", IMDB_TEST, edit_line(8, lambda x: x[:12] + b"\x00" + x[12:]), 8),
    BadFile("jsonl bad utf-8", "imdb", "test", IMDB_TEST, edit_line(9, lambda x: x[:12] + BAD_UTF8 + x[12:]), 9),
    BadFile("jsonl empty (empty split)", "imdb", "test", IMDB_TEST, lambda data: b""),
    BadFile("gz truncated", "imdb", "test", IMDB_TEST, cut_at(0.5), raw=True),
    BadFile("gz not gzip", "imdb", "test", IMDB_TEST, lambda data: b'{"text": "plain", "label": 1}\n', raw=True),
    BadFile(
        "gz corrupt middle",
        "imdb",
        "test",
        IMDB_TEST,
        lambda data: data[:200] + bytes(b ^ 0x5A for b in data[200:400]) + data[400:],
        raw=True,
    ),
    BadFile("imdb record missing id", "imdb", "train", IMDB_TRAIN, edit_jsonl(3, without("id")), 3),
    BadFile("imdb record missing rating", "imdb", "train", IMDB_TRAIN, edit_jsonl(4, without("rating")), 4),
    BadFile("imdb id not a string", "imdb", "train", IMDB_TRAIN, edit_jsonl(4, with_value("id", 17)), 4),
    # AdvGLUE: one JSON document {task: [records]}
    BadFile("advglue truncated json", "advglue-sst2", "dev", ADVGLUE, cut_at(0.6), whole=True),
    BadFile(
        "advglue null record",
        "advglue-sst2",
        "dev",
        ADVGLUE,
        edit_json(advglue_record("sst2", 3, lambda r: None)),
        whole=True,
    ),
    BadFile(
        "advglue record missing label",
        "advglue-sst2",
        "dev",
        ADVGLUE,
        edit_json(advglue_record("sst2", 2, without("label"))),
        whole=True,
    ),
    BadFile(
        "advglue pair missing second text",
        "advglue-qnli",
        "dev",
        ADVGLUE,
        edit_json(advglue_record("qnli", 1, without("sentence"))),
        whole=True,
    ),
    BadFile(
        "advglue task missing",
        "advglue-rte",
        "dev",
        ADVGLUE,
        edit_json(lambda d: {k: v for k, v in d.items() if k != "rte"}),
        whole=True,
    ),
    BadFile(
        "advglue task not a list",
        "advglue-sst2",
        "dev",
        ADVGLUE,
        edit_json(lambda d: {**d, "sst2": {"a": d["sst2"][0]}}),
        whole=True,
    ),
    BadFile("advglue top level a list", "advglue-sst2", "dev", ADVGLUE, edit_json(lambda d: d["sst2"]), whole=True),
    BadFile(
        "advglue empty task (empty split)",
        "advglue-sst2",
        "dev",
        ADVGLUE,
        edit_json(lambda d: {**d, "sst2": []}),
        whole=True,
    ),
    BadFile(
        "advglue bad utf-8",
        "advglue-sst2",
        "dev",
        ADVGLUE,
        lambda data: data.replace(b"uneven treat", b"uneven " + BAD_UTF8, 1),
        5,
        whole=True,
    ),
    # glue_subsets: one JSON object {id: {text_a, text_b, label}}
    BadFile("subset holding a list", "qqp", "dev", QQP_DEV, edit_json(lambda d: list(d.values())), whole=True),
    BadFile("subset truncated json", "qqp", "dev", QQP_DEV, cut_at(0.5), whole=True),
    BadFile("subset null record", "qqp", "dev", QQP_DEV, edit_json(subset_record("5", lambda r: None)), whole=True),
    BadFile(
        "subset pair without text_b",
        "qqp",
        "dev",
        QQP_DEV,
        edit_json(subset_record("7", without("text_b"))),
        whole=True,
    ),
    BadFile(
        "subset single with text_b",
        "sst2",
        "subset-dev",
        SST_SUBSET,
        edit_json(subset_record("7", with_value("text_b", "a second text"))),
        whole=True,
    ),
    BadFile(
        "subset text is a number",
        "qqp",
        "dev",
        QQP_DEV,
        edit_json(subset_record("9", with_value("text_a", 12))),
        whole=True,
    ),
    BadFile(
        "subset unknown label",
        "qqp",
        "dev",
        QQP_DEV,
        edit_json(subset_record("4", with_value("label", "maybe"))),
        whole=True,
    ),
    BadFile("subset empty object (empty split)", "qqp", "dev", QQP_DEV, edit_json(lambda d: {}), whole=True),
    BadFile(
        "subset bad utf-8", "qqp", "dev", QQP_DEV, lambda data: data.replace(b"stupidest", BAD_UTF8, 1), 3, whole=True
    ),
    # AG News CSV
    BadFile("csv bad utf-8", "ag_news", "test", AG, edit_line(3, lambda x: x[:20] + BAD_UTF8 + x[20:]), 3),
    BadFile("csv oversized field", "ag_news", "test", AG, set_line(4, LONG_FIELD), 4),
    BadFile("csv two fields", "ag_news", "test", AG, set_line(2, b'"3","only a title"'), 2),
    BadFile("csv unknown class", "ag_news", "test", AG, set_line(5, b'"9","title","text"'), 5),
    BadFile("csv NUL byte", "ag_news", "test", AG, edit_line(6, lambda x: x[:10] + b"\x00" + x[10:]), 6),
    BadFile("csv empty (empty split)", "ag_news", "test", AG, lambda data: b""),
    # MR: one sentence per line
    BadFile("lines NUL byte", "mr", "test", MR_POS, edit_line(3, lambda x: x[:10] + b"\x00" + x[10:]), 3),
    BadFile("lines bad utf-8", "mr", "test", MR_POS, edit_line(4, lambda x: x + BAD_UTF8), 4),
    BadFile("lines blank line", "mr", "test", MR_POS, set_line(5, b"   "), 5),
    # SNLI parallel files
    BadFile("parallel length mismatch", "snli", "dev", SNLI_S2, keep_lines(30)),
    BadFile("parallel empty hypothesis", "snli", "dev", SNLI_S2, set_line(4, b" "), 4),
    BadFile("parallel NUL byte", "snli", "dev", SNLI_S2, edit_line(5, lambda x: b"\x00" + x), 5),
    # TextFooler attack sets
    BadFile("label-text no text", "textfooler-mr", "test", TF_MR, set_line(3, b"1"), 3),
    BadFile("label-text NUL byte", "textfooler-mr", "test", TF_MR, edit_line(4, lambda x: x + b"\x00"), 4),
    BadFile("nli line two fields", "textfooler-snli", "test", TF_SNLI, set_line(2, b"neutral\ta premise only"), 2),
    BadFile("nli line four fields", "textfooler-snli", "test", TF_SNLI, edit_line(3, lambda x: x + b"\textra"), 3),
]


def _read_head(path: Path, whole: bool) -> bytes:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        if whole:
            return f.read()
        return b"".join(line for _, line in zip(range(HEAD_LINES), f, strict=False))


def _write(path: Path, data: bytes, compress: bool) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(data, mtime=0) if compress else data)


def build(case: BadFile, real_root: Path, tmp_root: Path) -> Path:
    """Copy the split's files (first lines, damaged target) under tmp_root; return the damaged file."""
    from robustft.data.tasks import get_task

    for relative in get_task(case.task).splits[case.split].files:
        source, copy = real_root / relative, tmp_root / relative
        gz = copy.suffix == ".gz"
        if relative.startswith("synonyms/"):  # IMDB's split list: read whole, never damaged
            _write(copy, source.read_bytes(), False)
            continue
        data = _read_head(source, case.whole)
        if relative != case.target:
            _write(copy, data, gz)
        elif case.raw:
            _write(copy, case.damage(gzip.compress(data, mtime=0)), False)
        else:
            _write(copy, case.damage(data), gz)
    return tmp_root / case.target
