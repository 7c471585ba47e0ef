"""Running a bench's jobs, shared with every other process working on the same bench folder: each process takes
the next job no other process holds (a lock file per job under <bench>/.lock-jobs/), and an evaluation or attack
waits while another process trains its model. `run_workers` starts N such processes here."""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import multiprocessing
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from robustft import runs, runtime
from robustft.attacks.run import attack
from robustft.bench import carry
from robustft.bench.matrix import Job
from robustft.bench.plan import status
from robustft.config import BenchConfig
from robustft.errors import RobustftError
from robustft.evaluation.run import evaluate
from robustft.training.loop import train

log = logging.getLogger("robustft.bench")

RUNNERS = {"train": train, "eval": evaluate, "attack": attack}
# Seconds between looks at jobs that wait for a model another process is training (or a job it holds).
WAIT_POLL_S = 5.0
CLAIMS = ".lock-jobs"  # one lock file per job: the process running it holds it
# cell -> True when its jobs would not end before the bench's deadline (bench/run.py builds it); None: none
TooLate = Callable[[str], bool] | None


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


@dataclasses.dataclass
class Queue:
    """The jobs still to run in this process, in the bench's order (its priority), and those that failed."""

    pending: list[Job]
    folder: Path  # the bench folder, whose claims are shared with other processes
    overwrite: bool
    bar: Any  # a tqdm bar: one step a job, whatever became of it
    jobs: list[Job]  # the bench's: a cell's restored results are checked against each model trained here
    too_late: TooLate
    wait: bool = True  # for what another process holds; False: leave it to that process
    failed: dict[str, str] = dataclasses.field(default_factory=dict)
    left: list[str] = dataclasses.field(default_factory=list)  # left to other processes (wait False)

    def __post_init__(self):
        self.pending = list(self.pending)
        self.ids = {j.id for j in self.pending}

    def finish(self, job: Job, why_failed: str | None = None) -> None:
        if why_failed is not None:
            self.failed[job.id] = why_failed
        self.pending.remove(job)
        self.bar.update(1)

    def put_off(self, job: Job) -> bool:
        """Leave a cell to do when its training and attacks would not end before the deadline."""
        if job.kind != "train" or not self.too_late or not self.too_late(job.cell):
            return False
        if held_elsewhere(self.folder, job.id) or status(job) == "done":
            return False  # another worker is training it (its jobs wait for it), or it finished meanwhile
        log.warning("bench: not starting %s: its training and attacks would not end before the deadline", job.id)
        for cell_job in [j for j in self.pending if j.cell == job.cell]:
            self.finish(cell_job)
        return True

    def waits_for_model(self, job: Job) -> bool:
        """An evaluation or attack whose model is still to be trained, here or by another process."""
        if job.kind == "train" or runs.is_finished(Path(job.config.model)):  # the cell's training folder
            return False
        if self.trains_here(job):
            return True
        ended_here = job.cell in self.ids and job.cell not in self.left  # trained, failed or put off here
        return not ended_here and held_elsewhere(self.folder, job.cell)

    def trains_here(self, job: Job) -> bool:
        return any(j.id == job.cell for j in self.pending)

    def leave(self, job: Job) -> None:
        """Leave a job another process holds, or whose model it trains, to that process (wait False)."""
        self.left.append(job.id)
        self.finish(job)

    def cannot_run(self, job: Job) -> str | None:
        """Why an evaluation or attack cannot use its model (None: it can, or it is a training)."""
        if job.kind == "train":
            return None
        if not runs.is_finished(Path(job.config.model)):
            return f"its model ({job.cell}) is not trained yet"
        return missing_weights(job)

    def run(self, job: Job) -> str | None:
        """Run one job here; returns why it failed (None when it did not)."""
        self.bar.set_postfix_str(job.id, refresh=True)
        try:
            with runtime.alone():  # a job is one process, even when the bench runs under torchrun
                RUNNERS[job.kind](job.config, resume=not self.overwrite, overwrite=self.overwrite)
            if job.kind == "train":
                self.drop_stale(job)
        except RobustftError as exc:
            log.error("bench job %s failed: %s", job.id, exc)
            return str(exc)
        return None

    def drop_stale(self, trained: Job) -> None:
        """After a training: delete the cell's restored results that another model computed, and queue them."""
        for job in carry.stale_jobs(trained, self.jobs):
            log.warning("bench: %s was computed on another model than %s has now: redoing it", job.id, trained.id)
            runs.delete_run(job.folder, job.kind)
            if job not in self.pending:
                self.pending.append(job)

    def try_job(self, job: Job) -> bool:
        """Run `job` when nothing stops it; True when it ran here (the queue then starts again from the front)."""
        if job not in self.pending or self.put_off(job):
            return False
        if status(job) == "done":  # another process finished it
            self.finish(job)
            return False
        if self.waits_for_model(job):
            if not self.wait and not self.trains_here(job):
                self.leave(job)
            return False
        if why := self.cannot_run(job):
            self.finish(job, why)
            return False
        with runs.try_hold(claim_path(self.folder, job.id)) as mine:
            if not mine:
                if not self.wait:
                    self.leave(job)
                return False
            why = self.run(job) if status(job) != "done" else None
        self.finish(job, why)
        return True

    def run_all(self) -> dict[str, str]:
        while self.pending:
            ran = any(self.try_job(job) for job in list(self.pending))  # stops at the first job run
            if self.pending and not ran:
                time.sleep(WAIT_POLL_S)
        self.bar.close()
        if self.left:
            log.warning("bench: left %d jobs to the processes that hold them or train their models", len(self.left))
        return self.failed


def run_jobs(
    pending: list[Job], folder: Path, overwrite: bool, bar, jobs=(), too_late: TooLate = None, wait: bool = True
) -> dict[str, str]:
    """Run the pending jobs in the bench's order, sharing them with any other process working on the same bench;
    a cell that `too_late` says would not end in time is not started (its jobs stay to do); with `wait` False, a
    job another process holds or trains the model of is left to it. Returns {job id: why it failed}."""
    return Queue(pending, folder, overwrite, bar, list(jobs), too_late, wait).run_all()


def progress_bar(cfg: BenchConfig, done: int, total: int, position: int = 0, label: str = ""):
    desc = f"bench {cfg.name}{label}"
    return tqdm(total=total, initial=done, desc=desc, unit="job", disable=not cfg.progress, position=position)


def run_workers(
    todo: list[Job], folder: Path, cfg: BenchConfig, overwrite: bool, jobs: list[Job], too_late: TooLate
) -> dict[str, str]:
    """`cfg.workers` processes (spawned: each sets up torch afresh) running `run_jobs` on the same jobs at once."""
    context = multiprocessing.get_context("spawn")
    with context.Pool(cfg.workers) as pool:
        outcomes = pool.starmap(
            work, [(todo, folder, cfg, overwrite, jobs, too_late, k) for k in range(cfg.workers)], chunksize=1
        )
    return {k: v for failed in outcomes for k, v in failed.items()}


def work(
    todo: list[Job], folder: Path, cfg: BenchConfig, overwrite: bool, jobs: list[Job], too_late: TooLate, k: int
) -> dict[str, str]:
    """One worker of `run_workers`."""
    runtime.quiet_libraries()
    threading.Thread(target=exit_with_parent, args=(os.getppid(),), daemon=True).start()
    bar = progress_bar(cfg, len(jobs) - len(todo), len(jobs), position=k, label=f" worker {k}")
    return run_jobs(todo, folder, overwrite, bar, jobs, too_late, cfg.wait)


def exit_with_parent(parent: int) -> None:
    """Stop this worker soon after the bench process is gone (killed, even with SIGKILL, which leaves the pool no
    time to end its workers): what the job finished is in its run folder, and the next bench resumes it."""
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(1)
