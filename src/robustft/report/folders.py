"""Reading run folders, the report's only input.

A run folder has config.json = {"robustft_run": 1, "verb", "config", "hash", "versions", "machine", "inputs",
"model_run": {"path", "config"} (for evaluations of a trained run)} and metrics.json; eval and attack runs
add examples.jsonl (or examples.jsonl.gz in committed results), probe runs probe.json. Arguments may also
be folders that hold run folders at any depth (e.g. a bench output or docs/results/<preset>).
"""

from __future__ import annotations

import gzip
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

from robustft import runs as run_files
from robustft.errors import DataFormatError, MissingResource

VERBS = ("train", "eval", "attack", "probe", "bench")
log = logging.getLogger("robustft.report")


@dataclass
class Run:
    path: Path
    name: str  # the folder's path relative to the common root of the inputs, for tables and links
    verb: str
    meta: dict  # the whole config.json
    metrics: dict
    examples: list[dict] | None = None  # eval: prediction lines; attack: AttackRecord dicts
    probe: dict | None = None
    extra: dict = field(default_factory=dict)

    @property
    def config(self) -> dict:
        return self.meta.get("config", {})

    @property
    def model_config(self) -> dict | None:
        """The training config of the model this run concerns (its own for train runs)."""
        if self.verb == "train":
            return self.config
        model_run = self.meta.get("model_run")
        return model_run.get("config") if model_run else None


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataFormatError(path, exc.lineno, f"not valid JSON: {exc.msg}") from None


def _read_jsonl(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    out = []
    with opener(path, "rt", encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                # a half-written last line of a killed run is not a result; anything else is corrupt
                if f.readline():
                    raise DataFormatError(path, number, "not valid JSON") from None
    return out


def is_run_folder(path: Path) -> bool:
    config = path / run_files.CONFIG
    if not config.is_file():
        return False
    try:
        return json.loads(config.read_text(encoding="utf-8")).get("robustft_run") == 1
    except (json.JSONDecodeError, AttributeError):
        return False


def find_run_folders(paths: list[Path]) -> list[Path]:
    """Run folders among `paths` and below them, at any depth (a bench run folder holds its cells), sorted,
    each once."""
    found: list[Path] = []
    for path in paths:
        path = Path(path)
        if not path.is_dir():
            raise MissingResource(f"{path} is not a folder")
        stack = [path]
        while stack:
            folder = stack.pop()
            if is_run_folder(folder):
                found.append(folder)
            stack.extend(sorted((p for p in folder.iterdir() if p.is_dir() and not p.is_symlink()), reverse=True))
    unique = sorted({p.resolve() for p in found})
    if not unique:
        raise MissingResource(f"no run folders (config.json with robustft_run) under {', '.join(map(str, paths))}")
    return unique


def load_run(path: Path, root: Path) -> Run:
    meta = _read_json(path / run_files.CONFIG)
    verb = meta.get("verb")
    if verb not in VERBS:
        raise DataFormatError(path / run_files.CONFIG, None, f"unknown verb {verb!r}; expected one of {VERBS}")
    metrics = _read_json(path / run_files.METRICS) if (path / run_files.METRICS).is_file() else {}
    examples = None
    for name in (run_files.EXAMPLES, run_files.EXAMPLES_GZ):
        if (path / name).is_file():
            examples = _read_jsonl(path / name)
            break
    probe = _read_json(path / "probe.json") if (path / "probe.json").is_file() else None
    name = path.relative_to(root).as_posix() if path != root else path.name
    return Run(path=path, name=name, verb=verb, meta=meta, metrics=metrics, examples=examples, probe=probe)


def load_runs(paths: list[Path]) -> list[Run]:
    """The finished runs under `paths`. A run still going (or stopped) holds only part of its examples or epochs,
    so its figures would pass for the whole run's: it is left out, with a warning naming it."""
    folders = find_run_folders(paths)
    root = Path(*_common_parts([f.parent.parts for f in folders]))
    runs = [load_run(f, root) for f in folders]
    unfinished = [r.name for r in runs if not r.metrics.get("complete")]  # as robustft.runs.is_finished decides
    if unfinished:
        log.warning(
            "report: left out %d unfinished run folder(s): %s",
            len(unfinished),
            ", ".join(unfinished[:5]) + (" ..." if len(unfinished) > 5 else ""),
        )
    finished = [r for r in runs if r.metrics.get("complete")]
    if not finished:
        raise MissingResource(f"no finished run folders under {', '.join(map(str, paths))}")
    return finished


def _common_parts(parts_list: list[tuple[str, ...]]) -> tuple[str, ...]:
    common = list(parts_list[0])
    for parts in parts_list[1:]:
        i = 0
        while i < min(len(common), len(parts)) and common[i] == parts[i]:
            i += 1
        common = common[:i]
    return tuple(common) or ("/",)
