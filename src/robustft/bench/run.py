"""`robustft bench` / `robustft.bench(cfg)`: run (or list) the jobs of a bench, reusing finished run folders and
resuming interrupted ones, then build the report from the run folders alone.

Jobs can be filtered (`only`, a glob on job ids) and run one at a time, so a bench spreads over sessions,
processes or machines; every job is its own locked run folder. Processes running the same bench share its jobs:
each takes the next job no other process holds, and an evaluation waits while another process trains its model;
`--workers N` starts N such processes here (one per core is fastest for CPU attacks). `--shard i/n` (automatic
under torchrun) gives a process every n-th cell from i, each cell with its evaluations and attacks (they need its
model); every job then runs as one process, on this rank's GPU. The bench's metrics.json lists every job's
status; the report is built once every job is done."""

from __future__ import annotations

import dataclasses
import datetime
import fnmatch
import hashlib
import logging
import multiprocessing
import os
import threading
import time
from pathlib import Path

from tqdm.auto import tqdm

from robustft import runs, runtime
from robustft.atomic import atomic_write_json
from robustft.attacks.run import attack
from robustft.bench import carry
from robustft.bench.calibrate import describe_factors, machine_factors, slowdown
from robustft.bench.estimate import job_seconds
from robustft.bench.matrix import Job, bench_dir, expand
from robustft.bench.precision import pin_auto_precision
from robustft.bench.progress import seconds_left
from robustft.config import BenchConfig
from robustft.errors import ConfigError, RobustftError
from robustft.evaluation.run import evaluate
from robustft.training.loop import train

log = logging.getLogger("robustft.bench")

RUNNERS = {"train": train, "eval": evaluate, "attack": attack}


def status(job: Job) -> str:
    if runs.is_finished(job.folder):
        return "done"
    return "partial" if (job.folder / runs.CONFIG).exists() else "todo"


def matches(job: Job, pattern: str) -> bool:
    """A glob on the job id from its start; a cell's id also takes the cell's evaluations and attacks. Not on any
    part of it: 'rift/*' would then also take every method's pwws-rift and genetic-rift attacks (a leading '*' asks
    for a part)."""
    return fnmatch.fnmatch(job.id, pattern) or fnmatch.fnmatch(job.id, f"{pattern} *")


def select(jobs: list[Job], only: str | None, skip: str | list[str] | None = None) -> list[Job]:
    """The jobs matching `only` (all when unset) and none of the `skip` globs, e.g. the costliest methods' cells left
    for last."""
    skips = [skip] if isinstance(skip, str) else list(skip or [])
    chosen = [j for j in jobs if (not only or matches(j, only)) and not any(matches(j, s) for s in skips)]
    if not chosen:
        but = " or ".join(f"'{s}'" for s in skips) or "''"
        raise ConfigError(f"only / skip: no job id matches '{only or '*'}' but not {but} (list them with --list)")
    return chosen


def shard_jobs(jobs: list[Job], shard: tuple[int, int] | None) -> list[Job]:
    """The jobs of the cells i, i+n, ... (in the bench's order) for shard (i, n), each cell with all its jobs."""
    if shard is None:
        return jobs
    cells = list(dict.fromkeys(j.cell for j in jobs))
    mine = {cells[k] for k in runs.shard_indices(len(cells), shard)}
    return [j for j in jobs if j.cell in mine]


def expected_seconds(jobs: list[Job], all_jobs: list[Job]) -> list[float]:
    """Each job's expected seconds (evaluations and attacks priced by the forward cost of the model they use)."""
    trained = {j.id: j.config for j in all_jobs if j.kind == "train"}
    return [job_seconds(j, trained.get(j.cell)) for j in jobs]


def expected_here(jobs: list[Job], all_jobs: list[Job], factors: dict[str, tuple[float, int]]) -> list[float]:
    """`expected_seconds` scaled by this machine's factors (bench/calibrate.py); a partly run job's part left at
    its own measured rate (bench/progress.py)."""
    scale = [factors.get(j.kind, (1.0, 0))[0] for j in jobs]
    priced = zip(jobs, expected_seconds(jobs, all_jobs), scale, strict=True)
    return [left if (left := seconds_left(j)) is not None else s * f for j, s, f in priced]


def describe_jobs(jobs: list[Job], all_jobs: list[Job], factors: dict[str, tuple[float, int]]) -> str:
    lines = [f"{'status':<8} {'~minutes':>8}  job"]
    for job, seconds in zip(jobs, expected_here(jobs, all_jobs, factors), strict=True):
        lines.append(f"{status(job):<8} {seconds / 60:8.1f}  {job.id}")
    return "\n".join(
        lines + [f"(minutes of one process on 2 cores, {describe_factors(factors)}, partly run jobs at their own rate)"]
    )


def record_bench(cfg: BenchConfig, folder) -> None:
    """The bench folder's config.json: the latest bench config run in it (each job's folder checks its own
    settings, so a changed method fails that job by name instead of mixing results). Not locked, so that several
    processes can run different jobs of one bench."""
    saved = runs.read_description(folder)
    if saved is not None and saved.get("verb") != "bench":
        raise ConfigError(f"output_dir: {folder} holds a robustft {saved.get('verb')} run, not a bench")
    if folder.exists() and saved is None and any(not p.name.startswith(".lock") for p in folder.iterdir()):
        raise ConfigError(f"output_dir: {folder} is not empty and is not a robustft bench folder")
    folder.mkdir(parents=True, exist_ok=True)
    with runs.hold(folder / runs.SHARDS_LOCK):  # shards of one bench write it at once
        atomic_write_json(folder / runs.CONFIG, runs.describe(dataclasses.replace(cfg, shard=None), {}))


# Seconds between looks at jobs that wait for a model another process is training (or a job it holds).
WAIT_POLL_S = 5.0
CLAIMS = ".lock-jobs"  # one lock file per job: the process running it holds it


def claim_path(folder: Path, job_id: str) -> Path:
    return folder / CLAIMS / hashlib.sha1(job_id.encode()).hexdigest()[:16]


def held_elsewhere(folder: Path, job_id: str) -> bool:
    with runs.try_hold(claim_path(folder, job_id)) as mine:
        return not mine


def missing_weights(job: Job) -> str | None:
    """Why a job cannot use its cell's finished training: its model was not carried here (`carry.restore`)."""
    model = Path(job.config.model)
    if runs.is_finished(model) and not (model / "best" / runs.CONFIG).is_file():
        return (
            f"its model's weights are not in {model} (its summaries were restored from elsewhere): train the cell "
            f"again with --only '{job.cell}' --overwrite (same seed, same model), then run this job"
        )
    return None


def drop_stale(trained: Job, jobs: list[Job], pending: list[Job]) -> None:
    """After a training: delete the cell's restored results that another model computed, and queue them again."""
    for job in carry.stale_jobs(trained, jobs):
        log.warning("bench: %s was computed on another model than %s has now: redoing it", job.id, trained.id)
        runs.delete_run(job.folder, job.kind)
        if job not in pending:
            pending.append(job)


def parse_deadline(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        return datetime.datetime.fromisoformat(text).replace(tzinfo=datetime.timezone.utc).timestamp()
    except ValueError:
        raise ConfigError(f"deadline: '{text}' is not a UTC time YYYY-MM-DDTHH:MM") from None


@dataclasses.dataclass
class Deadline:
    """No cell starts training past `at` (seconds since the epoch) minus the expected seconds of its training,
    evaluations and attacks: its model does not outlive the session (checkpoints are not carried), so a cell cut off
    is trained again in the next one, even where its attacks keep their examples. Each cell is priced when it would
    start, with the machine's factors as they are then: the jobs finished since the bench started (its own
    included) correct an estimate that the session's first trainings show to be off."""

    at: float
    cells: dict[str, list[Job]]  # each trained cell's jobs still to do
    jobs: list[Job]  # the bench's, for the models its evaluations and attacks use
    root: Path  # the benches whose finished jobs calibrate the estimate (bench/calibrate.py)
    slower: float  # one-thread workers: each job takes longer than one process on every core

    def cell_seconds(self, cell: str) -> float:
        todo = self.cells.get(cell, [])
        return sum(expected_here(todo, self.jobs, machine_factors(self.root))) * self.slower

    def leaves_no_time_for(self, cell: str) -> bool:
        return time.time() + self.cell_seconds(cell) > self.at


def deadline_for(cfg: BenchConfig, todo: list[Job], jobs: list[Job], root: Path) -> Deadline | None:
    at = parse_deadline(cfg.deadline)
    if at is None:
        return None
    trained = {j.cell for j in todo if j.kind == "train"}
    cells: dict[str, list[Job]] = {}
    for job in todo:
        if job.cell in trained:
            cells.setdefault(job.cell, []).append(job)
    return Deadline(at, cells, jobs, root, slowdown(cfg.threads))


def run_jobs(
    pending: list[Job], folder: Path, overwrite: bool, bar, jobs: list[Job] = (), deadline: Deadline | None = None
) -> dict[str, str]:
    """Run the pending jobs in the bench's order, sharing them with any other process working on the same bench:
    a job another process holds is left to it, and one whose model another process is training waits for it.
    `jobs` (the bench's) are checked against each model trained here; a cell whose training `deadline` leaves no
    time for is not started (its jobs stay to do). Returns {job id: why it failed}."""
    failed: dict[str, str] = {}
    pending = list(pending)
    ids = {j.id for j in pending}
    while pending:
        ran = False
        for job in list(pending):
            if job not in pending:  # put off with its cell below
                continue
            if (
                job.kind == "train"
                and deadline
                and deadline.leaves_no_time_for(job.cell)
                and not held_elsewhere(folder, job.id)  # another worker is training it: its jobs wait for it
                and status(job) != "done"  # after the hold: a training finished elsewhere meanwhile is done
            ):
                why = "its training and attacks would not end before the deadline"
                log.warning("bench: not starting %s: %s", job.id, why)
                for put_off in [j for j in pending if j.cell == job.cell]:
                    pending.remove(put_off)
                    bar.update(1)
                continue
            if status(job) == "done":  # another process finished it
                pending.remove(job)
                bar.update(1)
                continue
            if job.kind != "train" and not runs.is_finished(Path(job.config.model)):  # the cell's training folder
                trainer = next((j for j in pending if j.id == job.cell), None)
                if trainer is not None or (job.cell not in ids and held_elsewhere(folder, job.cell)):
                    continue  # its model is being (or still to be) trained
                failed[job.id] = f"its model ({job.cell}) is not trained yet"
                pending.remove(job)
                bar.update(1)
                continue
            if job.kind != "train" and (why := missing_weights(job)):
                failed[job.id] = why
                pending.remove(job)
                bar.update(1)
                continue
            with runs.try_hold(claim_path(folder, job.id)) as mine:
                if not mine:
                    continue
                if status(job) != "done":
                    bar.set_postfix_str(job.id, refresh=True)
                    try:
                        with runtime.alone():  # a job is one process, even when the bench runs under torchrun
                            RUNNERS[job.kind](job.config, resume=not overwrite, overwrite=overwrite)
                        if job.kind == "train":
                            drop_stale(job, jobs, pending)
                    except RobustftError as exc:
                        failed[job.id] = str(exc)
                        log.error("bench job %s failed: %s", job.id, exc)
            pending.remove(job)
            bar.update(1)
            ran = True
            break  # back to the front: the bench's order is its priority
        if pending and not ran:
            time.sleep(WAIT_POLL_S)
    bar.close()
    return failed


def progress_bar(cfg: BenchConfig, done: int, total: int, position: int = 0, label: str = ""):
    return tqdm(
        total=total,
        initial=done,
        desc=f"bench {cfg.name}{label}",
        unit="job",
        disable=not cfg.progress,
        position=position,
    )


def run_workers(
    todo: list[Job], folder: Path, cfg: BenchConfig, overwrite: bool, jobs: list[Job], deadline: Deadline | None
) -> dict:
    """`cfg.workers` processes (spawned: each sets up torch afresh) running `run_jobs` on the same jobs at once."""
    context = multiprocessing.get_context("spawn")
    with context.Pool(cfg.workers) as pool:
        outcomes = pool.starmap(
            work, [(todo, folder, cfg, overwrite, jobs, deadline, k) for k in range(cfg.workers)], chunksize=1
        )
    return {k: v for failed in outcomes for k, v in failed.items()}


def work(
    todo: list[Job], folder: Path, cfg: BenchConfig, overwrite: bool, jobs: list[Job], deadline: Deadline | None, k: int
) -> dict:
    """One worker of `run_workers`."""
    runtime.quiet_libraries()
    threading.Thread(target=exit_with_parent, args=(os.getppid(),), daemon=True).start()
    bar = progress_bar(cfg, len(jobs) - len(todo), len(jobs), position=k, label=f" worker {k}")
    return run_jobs(todo, folder, overwrite, bar, jobs, deadline)


def exit_with_parent(parent: int) -> None:
    """Stop this worker soon after the bench process is gone (killed, even with SIGKILL, which leaves the pool no
    time to end its workers): what the job finished is in its run folder, and the next bench resumes it."""
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(1)


def bench(
    cfg: BenchConfig,
    only: str | None = None,
    list_only: bool = False,
    resume: bool = True,
    overwrite: bool = False,
    skip: str | list[str] | None = None,
    save_to: Path | None = None,
    restore_from: Path | None = None,
) -> dict:
    """Run every selected job not yet finished (resuming interrupted ones); returns {job id: status} and the
    finished run folders (`robustft.report` builds the report from them). `overwrite` restarts the selected jobs.
    `restore_from` first brings back what `save_to` saved elsewhere (`carry`); `save_to` saves and runs nothing."""
    cfg = cfg.validate()
    parse_deadline(cfg.deadline)  # a bad one is named before anything runs
    if cfg.workers > 1 and cfg.threads is None:  # the cores shared out, so workers do not fight over them
        cfg = dataclasses.replace(cfg, threads=max(1, runtime.cpu_cores() // cfg.workers))
    jobs = expand(cfg)
    folder = bench_dir(cfg)
    shard = runs.shard_of(cfg)
    chosen = shard_jobs(select(jobs, only, skip), shard)
    if save_to is not None:
        counts = carry.save(chosen, folder, Path(save_to))
        print(f"bench {cfg.name}: saved {counts['finished']} finished, {counts['partial']} partial jobs to {save_to}")
        return {"jobs": {j.id: status(j) for j in chosen}, "saved": counts}
    if restore_from is not None:
        record_bench(cfg, folder)  # a bench folder first: what is restored goes into one
        counts = carry.restore(chosen, folder, Path(restore_from))
        print(
            f"bench {cfg.name}: restored {counts['finished']} finished and {counts['partial']} partial jobs from "
            f"{restore_from}; {counts['retrain']} model(s) to train again for the jobs still to do"
        )
    pin_auto_precision(jobs, cfg.device)
    factors = machine_factors(folder.parent)
    if list_only:
        print(describe_jobs(chosen, jobs, factors))
        return {"jobs": {j.id: status(j) for j in chosen}}
    record_bench(cfg, folder)
    todo = [j for j in chosen if status(j) != "done"]
    expected = sum(expected_here(todo, jobs, factors))
    part = f" (shard {shard[0]}/{shard[1]})" if shard else ""
    if runtime.world().main or shard is None or cfg.shard:
        print(
            f"bench {cfg.name}{part}: {len(chosen)} jobs, {len(chosen) - len(todo)} already done; expected wall "
            f"time about {expected / 60:.0f} min with MiniLM as one process (an estimate from benchmarks/results, "
            f"{describe_factors(factors)}, partly run jobs at their own rate; two one-thread workers ran a small IM "
            "study 1.16-1.24x faster)"
        )
    started = time.perf_counter()
    deadline = deadline_for(cfg, todo, jobs, folder.parent)
    if cfg.workers > 1:
        failed = run_workers(todo, folder, cfg, overwrite, chosen, deadline)
    else:
        bar = progress_bar(cfg, len(chosen) - len(todo), len(chosen))
        failed = run_jobs(todo, folder, overwrite, bar, chosen, deadline)
    result = {
        "jobs": {j.id: ("failed: " + failed[j.id]) if j.id in failed else status(j) for j in chosen},
        "wall_s": round(time.perf_counter() - started, 1),
        "expected_s": round(expected, 1),
        "folders": [str(j.folder) for j in jobs if runs.is_finished(j.folder)],
        "baseline": cfg.baseline,
        "complete": all(status(j) == "done" for j in jobs),
    }
    if shard is not None:
        result["shard"] = f"{shard[0]}/{shard[1]}"
    with runs.hold(folder / runs.SHARDS_LOCK):
        statuses = {j.id: status(j) for j in jobs} | {k: v for k, v in result["jobs"].items() if k in failed}
        atomic_write_json(folder / runs.METRICS, {**result, "jobs": statuses})
    if failed:
        raise BenchJobsFailed(
            f"{len(failed)} of {len(chosen)} jobs failed: "
            + "; ".join(f"{k}: {v}" for k, v in list(failed.items())[:3])
            + (" ..." if len(failed) > 3 else "")
        )
    return result


class BenchJobsFailed(RobustftError):
    """Some jobs of a bench did not finish; the others are kept and the report covers them."""
