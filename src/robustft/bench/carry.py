"""A bench's progress carried to another machine without its models: `save` writes every job's summaries and
per-example lines (finished or not) under a folder small enough to commit; `restore` puts them back into a bench
folder on a fresh checkout, so the bench goes on where the other machine stopped.

Models and checkpoints stay behind (tens of MB each). So a cell whose jobs are all finished comes back whole
(nothing more needs its model), and a cell with jobs still to do comes back without its training's results: the
bench trains that model again, from the same seed, and `stale_jobs` then checks every restored job of the cell
against the new model's digests, so a result is never mixed with a model it was not computed on.

Layout (the bench folder's own, relative to it): <dest>/cells/<cell>/{config.json, metrics.json, *.log} and
<dest>/cells/<cell>/<job>/{config.json, metrics.json, examples.jsonl.gz, *.log}. `robustft report <dest>` reads it.
"""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

from robustft import runs
from robustft.atomic import atomic_write_bytes
from robustft.bench.matrix import Job
from robustft.data.digests import model_digests


def relative(job: Job, bench: Path) -> Path:
    return job.folder.relative_to(bench)


def save(jobs: list[Job], bench: Path, dest: Path) -> dict[str, int]:
    """Write the state of every job that has started into `dest` (each job's files there replaced); returns how
    many were finished and how many partial."""
    counts = {"finished": 0, "partial": 0}
    for job in jobs:
        saved = dest / relative(job, bench)
        if being_redone(job.folder, saved):
            # a training restored for retraining and not (yet) trained again here: replacing the saved one would
            # erase its log and results, which stand until the same settings train it again to the end
            counts["finished"] += 1
            continue
        if (job.folder / runs.CONFIG).is_file():
            runs.export_run(job.folder, saved)
            counts["finished" if runs.is_finished(job.folder) else "partial"] += 1
    return counts


def being_redone(folder: Path, saved: Path) -> bool:
    """`saved` is a finished run and `folder` the same run (same settings hash) not finished here: a training
    restored to train again (config only, or part-way through its epochs)."""
    mine, theirs = runs.read_description(folder), runs.read_description(saved)
    return (
        mine is not None
        and theirs is not None
        and mine.get("hash") == theirs.get("hash")
        and runs.is_finished(saved)
        and not runs.is_finished(folder)
    )


def restore(jobs: list[Job], bench: Path, src: Path) -> dict[str, int]:
    """Put the saved state of every job not started here back into the bench folder. A training comes back
    finished only when every job of its cell is saved finished; otherwise only its config.json comes back (the
    bench trains it again, and the folder stays a run folder for the jobs restored inside it). `src` is a folder
    (bench/run.py checked it)."""
    counts = {"finished": 0, "partial": 0, "retrain": 0}
    cell_done = {}
    for job in jobs:
        cell_done[job.cell] = cell_done.get(job.cell, True) and runs.is_finished(src / relative(job, bench))
    for job in jobs:
        saved, folder = src / relative(job, bench), job.folder
        if not (saved / runs.CONFIG).is_file() or (folder / runs.CONFIG).is_file():
            continue  # nothing saved, or this machine has its own
        folder.mkdir(parents=True, exist_ok=True)
        if job.kind == "train" and not cell_done[job.cell]:
            shutil.copyfile(saved / runs.CONFIG, folder / runs.CONFIG)
            counts["retrain"] += 1
            continue
        if (saved / runs.EXAMPLES_GZ).is_file():
            atomic_write_bytes(folder / runs.EXAMPLES, gzip.decompress((saved / runs.EXAMPLES_GZ).read_bytes()))
        # metrics.json last: it is what marks a job finished, so a restore cut short leaves it to redo
        for file in sorted(saved.iterdir(), key=lambda f: f.name == runs.METRICS):
            if file.is_file() and file.name != runs.EXAMPLES_GZ:
                shutil.copyfile(file, folder / file.name)
        counts["finished" if runs.is_finished(folder) else "partial"] += 1
    return counts


def used_model(folder: Path) -> dict[str, str]:
    """The model digests a job recorded in its config.json (what it was computed on)."""
    inputs = (runs.read_description(folder) or {}).get("inputs", {})
    return {k: v for k, v in inputs.items() if k.startswith("model/")}


def stale_jobs(trained: Job, jobs: list[Job]) -> list[Job]:
    """The started jobs of `trained`'s cell that recorded other model digests than its model has now (a restored
    result from a training that did not come out bit for bit the same)."""
    current = model_digests(str(trained.folder / "best"))
    return [j for j in jobs if j.cell == trained.id and j.kind != "train" and used_model(j.folder) not in ({}, current)]
