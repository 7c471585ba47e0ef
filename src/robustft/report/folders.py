"""The run folders the report reads, its only input (found and read by `robustft.runs`; here: which it takes).

A run folder has config.json = {"robustft_run": 1, "verb", "config", "hash", "versions", "machine", "inputs",
"model_run": {"path", "config"} (for evaluations of a trained run)} and metrics.json; eval and attack runs
add examples.jsonl (or examples.jsonl.gz in committed results), probe runs probe.json. Arguments may also
be folders that hold run folders at any depth (e.g. a bench output or docs/results/<preset>).
"""

from __future__ import annotations

import logging
from pathlib import Path

from robustft import runs as run_files
from robustft.errors import MissingResource
from robustft.runs import Run, find_run_folders

log = logging.getLogger("robustft.report")


def load_run(path: Path, root: Path) -> Run:
    name = path.relative_to(root).as_posix() if path != root else path.name
    return run_files.read_run(path, name)


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
