"""`robustft bench` / `robustft.bench(cfg)`: run the jobs of a bench, reusing finished run folders and resuming
interrupted ones, then build the report from the run folders alone. `list_jobs`, `save` and `restore` are its other
commands (`robustft bench list PRESET`, `robustft bench save PRESET DIR`, `robustft bench restore PRESET DIR`).

Jobs can be filtered (`only`, a glob on job ids) and run one at a time, so a bench spreads over sessions,
processes or machines; every job is its own locked run folder. Processes running the same bench share its jobs
(bench/runner.py); `--workers N` starts N such processes here. `--shard i/n` (automatic under torchrun) gives a
process every n-th cell from i, each cell with its evaluations and attacks (they need its model); every job then
runs as one process, on this rank's GPU. The bench's metrics.json lists every job's status; the report is built
once every job of a sharded bench is done (by the shard that finds them done), after every call otherwise."""

from __future__ import annotations

import dataclasses
import datetime
import time
import warnings
from pathlib import Path

from robustft import runs, runtime
from robustft.atomic import atomic_write_json
from robustft.bench import carry
from robustft.bench.costs import machine_factors, price_jobs
from robustft.bench.matrix import Job, bench_dir
from robustft.bench.plan import Plan, plan, status
from robustft.bench.precision import pin_auto_precision
from robustft.bench.pricing.forecast import describe_factors, describe_jobs, describe_wall_time
from robustft.bench.pricing.rates import slowdown
from robustft.bench.runner import progress_bar, run_jobs, run_workers
from robustft.clock import working_seconds
from robustft.config import BenchConfig
from robustft.errors import ConfigError, RobustftError
from robustft.report import build_report
from robustft.report.summary import standing


class BenchJobsFailed(RobustftError):
    """Some jobs of a bench did not finish; the others are kept and the report covers them."""


def cores_shared(cfg: BenchConfig) -> BenchConfig:
    """With several workers and no `threads`, each worker gets its share of the cores, so that they do not fight
    over them (the bench says so when it starts); a `threads` the user set is kept as it is. More workers than
    cores are capped at the cores, saying so (1000 on 2 cores would only start processes that share them)."""
    if cfg.workers > runtime.cpu_cores():
        warnings.warn(
            f"workers: {cfg.workers} on {runtime.cpu_cores()} CPU cores: running {runtime.cpu_cores()}", stacklevel=2
        )
        cfg = dataclasses.replace(cfg, workers=runtime.cpu_cores())
    if cfg.workers > 1 and cfg.threads is None:
        return dataclasses.replace(cfg, threads=max(1, runtime.cpu_cores() // cfg.workers))
    return cfg


def list_jobs(cfg: BenchConfig, only: str | None = None, skip: str | list[str] | None = None) -> dict[str, str]:
    """Print the selected jobs with their status and expected minutes here; returns {job id: status}. Writes
    nothing (no folder, lock or log)."""
    parse_deadline(cfg.deadline)  # a bad one is named before anything runs
    p = plan(cores_shared(cfg), only, skip)
    pin_auto_precision(p.jobs, p.cfg.device)
    factors = machine_factors(p.folder.parent)
    rows = [(status(j), s, j) for j, s in zip(p.chosen, price_jobs(p.chosen, p.jobs, factors), strict=True)]
    print(describe_jobs([(st, s, j.id) for st, s, j in rows], factors))
    todo, seconds = [j for st, _, j in rows if st != "done"], [s for st, s, _ in rows if st != "done"]
    forecast = describe_wall_time(todo, seconds, p.cfg.workers, p.cfg.threads, start=time.time())
    print(f"to do: {forecast} if started now")
    return p.statuses()


def save(cfg: BenchConfig, dest: Path, only: str | None = None, skip: str | list[str] | None = None) -> dict:
    """Save every started job's summaries and per-example lines (no models) under `dest` (bench/carry.py); runs
    nothing. Returns how many finished and partial jobs were saved."""
    p = plan(cfg, only, skip)
    counts = carry.save(p.chosen, p.folder, Path(dest))
    print(f"bench {p.cfg.name}: saved {counts['finished']} finished, {counts['partial']} partial jobs to {dest}")
    return counts


def restore(cfg: BenchConfig, src: Path, only: str | None = None, skip: str | list[str] | None = None) -> dict:
    """Bring back into the bench folder what `save` wrote to `src` (jobs this machine has not started); runs
    nothing. Returns how many finished and partial jobs came back, and how many models are to train again."""
    p = plan(cfg, only, skip)
    if not Path(src).is_dir():
        raise ConfigError(f"restore: {src} is not a folder (one written by `robustft bench save PRESET DIR`)")
    record_bench(p.cfg, p.folder)  # a bench folder first: what is restored goes into one
    counts = carry.restore(p.chosen, p.folder, Path(src))
    print(
        f"bench {p.cfg.name}: restored {counts['finished']} finished and {counts['partial']} partial jobs from "
        f"{src}; {counts['retrain']} model(s) to train again for the jobs still to do"
    )
    return counts


def being_set_up(entry: Path) -> bool:
    """A lock file, or the config.json another shard of the bench is writing (atomic_write's temporary file)."""
    return entry.name.startswith(".lock") or (entry.name.startswith(f"{runs.CONFIG}.") and entry.suffix == ".tmp")


def record_bench(cfg: BenchConfig, folder: Path) -> None:
    """The bench folder's config.json: the latest bench config run in it (each job's folder checks its own
    settings, so a changed method fails that job by name instead of mixing results). Not locked, so that several
    processes can run different jobs of one bench."""
    saved = runs.read_description(folder)
    if saved is None and folder.exists() and any(not being_set_up(p) for p in folder.iterdir()):
        saved = runs.read_description(folder)  # another shard of this bench may have written it meanwhile
        if saved is None:
            raise ConfigError(f"output_dir: {folder} is not empty and is not a robustft bench folder")
    if saved is not None and saved.get("verb") != "bench":
        raise ConfigError(f"output_dir: {folder} holds a robustft {saved.get('verb')} run, not a bench")
    folder.mkdir(parents=True, exist_ok=True)
    with runs.hold(folder / runs.SHARDS_LOCK):  # shards of one bench write it at once
        atomic_write_json(folder / runs.CONFIG, runs.describe(dataclasses.replace(cfg, shard=None), {}))


def announce(p: Plan, todo: list, seconds: list[float], factors: dict, threads_chosen: bool) -> None:
    """The line a bench starts with (once: by the main process, or by each shard given by hand)."""
    if not (runtime.world().main or p.shard is None or p.cfg.shard):
        return
    part = f" (shard {p.shard[0]}/{p.shard[1]})" if p.shard else ""
    workers = f"; {p.cfg.workers} workers" if p.cfg.workers > 1 else ""
    if threads_chosen:
        workers += f" of {p.cfg.threads} thread(s) each (the cores shared out; set --threads to choose)"
    print(
        f"bench {p.cfg.name}{part}: {len(p.chosen)} jobs, {len(p.chosen) - len(todo)} already done{workers}; "
        f"expected {describe_wall_time(todo, seconds, p.cfg.workers, p.cfg.threads, start=time.time())} "
        f"(priced from measured rates, {describe_factors(factors)}, partly run jobs at their own rate)"
    )


def report_bench(cfg: BenchConfig, jobs_done: int | None = None, jobs: int | None = None) -> Path:
    """Build the bench's report from its run folders (and those of the benches `report_with` names) into
    <bench>/report; returns that folder. With `jobs_done` < `jobs` the bench is unfinished: its report shows the
    numbers but no verdicts (SPEC section 7)."""
    folder = bench_dir(cfg)
    partners = [folder.parent / name for name in cfg.report_with]
    for missing in [p for p in partners if not p.is_dir()]:
        print(f"report: without {missing} (report_with names it, but this machine has no such bench folder)")
    folders = [folder, *(p for p in partners if p.is_dir())]
    with runs.hold(folder / runs.SHARDS_LOCK):  # shards finishing together build it one after the other
        unfinished = jobs is not None and jobs_done < jobs
        why = f"still running, {jobs_done} of {jobs} jobs" if unfinished else ""
        title, study = f"robustft bench {cfg.name}", standing(finished=not unfinished, why=why)
        build_report(folders, folder / "report", baseline=cfg.baseline, bench_baseline=True, title=title, study=study)
    return folder / "report"


def parse_deadline(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        return datetime.datetime.fromisoformat(text).replace(tzinfo=datetime.timezone.utc).timestamp()
    except ValueError:
        raise ConfigError(f"deadline: '{text}' is not a UTC time YYYY-MM-DDTHH:MM") from None


@dataclasses.dataclass
class Deadline:
    """The runner's deadline predicate: called with a cell, True when it should not start, its training, evaluations
    and attacks ending past `at` (seconds since the epoch): its model does not outlive the session (checkpoints are
    not carried, bench/carry.py). Each cell is priced when asked, with the machine's factors as they are then: the
    jobs finished since the bench started correct an estimate that the session's first trainings show to be off."""

    at: float
    todo: list[Job]  # the bench's jobs still to do (a cell asked about has its training among them)
    jobs: list[Job]  # the bench's, for the models its evaluations and attacks use
    root: Path  # the benches whose finished jobs calibrate the estimate
    slower: float  # one-thread workers: each job takes longer than one process on every core

    def cell_seconds(self, cell: str) -> float:
        mine = [j for j in self.todo if j.cell == cell]
        return sum(price_jobs(mine, self.jobs, machine_factors(self.root))) * self.slower

    def __call__(self, cell: str) -> bool:
        return time.time() + self.cell_seconds(cell) > self.at


def deadline_for(cfg: BenchConfig, todo: list[Job], jobs: list[Job], root: Path) -> Deadline | None:
    at = parse_deadline(cfg.deadline)
    return None if at is None else Deadline(at, todo, jobs, root, slowdown(cfg.threads))


def run_todo(p: Plan, todo: list, overwrite: bool) -> dict[str, str]:
    """Run the jobs still to do, in worker processes or here; returns {job id: why it failed}."""
    deadline = deadline_for(p.cfg, todo, p.jobs, p.folder.parent)
    if p.cfg.workers > 1:
        return run_workers(todo, p.folder, p.cfg, overwrite, p.chosen, deadline)
    bar = progress_bar(p.cfg, len(p.chosen) - len(todo), len(p.chosen))
    return run_jobs(todo, p.folder, overwrite, bar, p.chosen, deadline, p.cfg.wait)


def record_outcome(p: Plan, failed: dict[str, str], wall_s: float, expected: float) -> dict:
    """The bench folder's metrics.json (every job's status), and the result of this call."""
    result = {
        "jobs": {j.id: ("failed: " + failed[j.id]) if j.id in failed else status(j) for j in p.chosen},
        "wall_s": round(wall_s, 1),
        "expected_s": round(expected, 1),
        "folders": [str(j.folder) for j in p.jobs if runs.is_finished(j.folder)],
        "baseline": p.cfg.baseline,
        "complete": all(status(j) == "done" for j in p.jobs),
    }
    if p.shard is not None:
        result["shard"] = f"{p.shard[0]}/{p.shard[1]}"
    with runs.hold(p.folder / runs.SHARDS_LOCK):
        statuses = p.statuses(p.jobs) | {k: v for k, v in result["jobs"].items() if k in failed}
        atomic_write_json(p.folder / runs.METRICS, {**result, "jobs": statuses})
    return result


def bench(cfg: BenchConfig, only=None, skip=None, overwrite: bool = False, restore_from: Path | None = None) -> dict:
    """Run every selected job not yet finished (resuming interrupted ones), then build the report from the run
    folders (once every job is done, for a shard). Returns {job id: status}, the finished run folders and the
    report's folder (`report`; absent when none was built). `overwrite` restarts the selected jobs;
    `restore_from` first brings back what `save` wrote elsewhere."""
    parse_deadline(cfg.deadline)  # a bad one is named before anything runs
    if restore_from is not None:
        restore(cfg, restore_from, only, skip)
    p = plan(cores_shared(cfg), only, skip)
    pin_auto_precision(p.jobs, p.cfg.device)
    record_bench(p.cfg, p.folder)
    todo = p.todo()
    factors = machine_factors(p.folder.parent)
    seconds = price_jobs(todo, p.jobs, factors)
    announce(p, todo, seconds, factors, threads_chosen=p.cfg.threads != cfg.threads)
    started = working_seconds()
    failed = run_todo(p, todo, overwrite)
    result = record_outcome(p, failed, working_seconds() - started, sum(seconds))
    if result["folders"] and (p.shard is None or result["complete"]):
        done = sum(status(j) == "done" for j in p.jobs)
        result["report"] = str(report_bench(p.cfg, done, len(p.jobs)))
    if failed:
        raise BenchJobsFailed(
            f"{len(failed)} of {len(p.chosen)} jobs failed: "
            + "; ".join(f"{k}: {v}" for k, v in list(failed.items())[:3])
            + (" ..." if len(failed) > 3 else "")
            + (f" (the report of the others: {result['report']})" if "report" in result else "")
        )
    return result
