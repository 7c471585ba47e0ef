"""Finding run folders under a path, reading one back whole (the report's input), and exporting one to commit."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

from robustft.errors import DataFormatError, MissingResource
from robustft.runs.names import CONFIG, EXAMPLES, EXAMPLES_GZ, MARK, METRICS, SUMMARY_FILES, VERBS
from robustft.runs.records import load_json, read_records, whole_lines
from robustft.runs.run import Run


def is_run_folder(path: Path) -> bool:
    """A folder with a config.json that robustft marked as a run's (folders from before the mark are not listed)."""
    config = Path(path) / CONFIG
    if not config.is_file():
        return False
    try:
        return json.loads(config.read_text(encoding="utf-8")).get(MARK) == 1
    except (json.JSONDecodeError, UnicodeDecodeError, AttributeError):
        return False


def find_run_folders(paths: list[Path]) -> list[Path]:
    """Run folders among `paths` and below them, at any depth (a bench run folder holds its cells), sorted,
    each once; symbolic links to folders are not followed."""
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


def read_run(path: Path, name: str = "") -> Run:
    """A run folder's config.json, metrics.json ({} before it is written), examples (examples.jsonl, or the
    exported examples.jsonl.gz) and probe.json, read without changing anything; a damaged file raises
    DataFormatError naming it."""
    path = Path(path)
    meta = load_json(path / CONFIG)
    verb = meta.get("verb") if isinstance(meta, dict) else None
    if verb not in VERBS:
        raise DataFormatError(path / CONFIG, None, f"unknown verb {verb!r}; expected one of {VERBS}")
    metrics = load_json(path / METRICS) if (path / METRICS).is_file() else {}
    examples = next((read_records(path / n) for n in (EXAMPLES, EXAMPLES_GZ) if (path / n).is_file()), None)
    probe = load_json(path / "probe.json") if (path / "probe.json").is_file() else None
    return Run(path, verb, meta, name=name or path.name, examples=examples, probe=probe, loaded_metrics=metrics)


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
