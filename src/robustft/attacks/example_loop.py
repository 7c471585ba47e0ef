"""Stream an attack through its run folder: one JSONL line per example, appended and fsync'd as it finishes, so a
crash loses nothing; `resume` keeps the finished records and attacks the rest (errored examples again). Per-example
seeds depend only on (seed, index), so a resumed run gives the same records as an uninterrupted one, and a shard
(every n-th example from i) gives the same records as one process.

With `concurrent` > 1, that many examples are attacked at once, one thread each, sharing every model call (see
lockstep.py): bigger batches for searches that ask about a few candidates at a time. Records then equal the
one-at-a-time run's up to float noise (a row's output depends slightly on what it is batched with). An example's
`seconds` is then its share of the working time (while k examples are in flight, each is charged 1/k of it), so
seconds per example stay comparable with one-at-a-time runs; its time limit still counts wall time in flight.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
import traceback

from robustft import runs
from robustft.atomic import atomic_write_text
from robustft.attacks.results import ERROR, AttackRecord, summarize, write_csv
from robustft.clock import paused_seconds, working_seconds
from robustft.data.example import Example
from robustft.errors import RobustftError

log = logging.getLogger(__name__)

CSV = "examples.csv"


def _postfix(records: list[AttackRecord]) -> dict:
    s = summarize(records)
    fmt = lambda v: "-" if v is None else f"{v:.1f}"
    return {
        "acc": fmt(s["accuracy_under_attack"]),
        "succ": fmt(s["attack_success_rate"]),
        "q": fmt(s["avg_num_queries"]),
    }


def finish(run: runs.Run, records: list[AttackRecord], total: int, seconds: float, paused: float = 0.0) -> dict:
    """`seconds`: this session's working time; `paused`: the time the process was stopped meanwhile (left out of
    `seconds` and of each example's, robustft.clock)."""
    records = sorted(records, key=lambda r: r.index)
    summary = summarize(records)
    summary["wall_seconds_this_session"] = round(seconds, 2)
    if paused:
        summary["paused_seconds_this_session"] = round(paused, 1)
    if run.shard is None:  # a shard's CSV is written by the merge, for the whole run
        write_csv(records, run.path / CSV)
    done = {r.index for r in records if r.result != ERROR}
    complete = len(done) == total
    if complete and run.shard is None:
        _in_index_order(run)
    return run.write_metrics(summary, complete=complete)


def _in_index_order(run: runs.Run) -> None:
    """Examples attacked several at once finish out of order: the finished file lists them by index, as one
    process attacking one at a time (and a merge of shards) writes it. Every line is kept (a retried error too)."""
    path = run.file(runs.EXAMPLES)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)  # whole lines: load_records mended any
    indices = [json.loads(line)["index"] for line in lines]
    if indices != sorted(indices):
        order = sorted(range(len(lines)), key=lambda n: indices[n])  # stable: a retried error stays before its retry
        atomic_write_text(path, "".join(lines[n] for n in order))


def merged_summary(records: list[dict], shard_metrics: list[dict]) -> dict:
    """metrics.json of a merged sharded attack: the summary one process gives (its wall time: the slowest shard)."""
    summary = summarize(sorted(map(AttackRecord.from_dict, records), key=lambda r: r.index))
    summary["wall_seconds_this_session"] = max(m.get("wall_seconds_this_session", 0.0) for m in shard_metrics)
    return summary


def merged_csv(path, records: list[dict]) -> None:
    write_csv(sorted(map(AttackRecord.from_dict, records), key=lambda r: r.index), path / CSV)


def run_attack(
    attack,
    examples: list[Example],
    run: runs.Run,
    seed: int = 0,
    progress: bool = True,
    first: int | None = None,
    concurrent: int = 1,
) -> tuple[list[AttackRecord], dict]:
    """Attack every example of this run (of its shard: `run.shard`) not yet in the run folder, appending each record
    as it finishes.

    `first` stops after the first `first` examples of the sample (a later resume does the rest); metrics.json then
    covers the records done so far and says `complete: false`. `concurrent`: examples in flight at once (attacks
    whose victim can share calls; others go one at a time).
    """
    records = [r for r in map(AttackRecord.from_dict, run.records()) if r.result != ERROR]  # errors are retried
    finished = {r.index for r in records}
    mine = runs.shard_indices(len(examples), run.shard)
    stop = len(examples) if first is None else min(first, len(examples))
    todo = [(i, examples[i]) for i in mine if i < stop and i not in finished]
    start, paused = working_seconds(), paused_seconds()
    bar = None
    if progress:
        from tqdm import tqdm

        wanted = [i for i in mine if i < stop]
        bar = tqdm(
            total=len(wanted),
            initial=len(finished & set(wanted)),
            desc=run.config.get("recipe", "attack"),
            unit="ex",
            dynamic_ncols=True,
        )
    lock = threading.Lock()

    def keep(record: AttackRecord) -> None:
        with lock:
            run.append(dataclasses.asdict(record))
            records.append(record)
            if bar is not None:
                bar.update(1)
                bar.set_postfix(_postfix(records), refresh=False)

    attack_each(attack, todo, seed, keep, concurrent)
    if bar is not None:
        bar.close()
    summary = finish(run, records, len(mine), working_seconds() - start, paused_seconds() - paused)
    return sorted(records, key=lambda r: r.index), summary


def attack_each(attack, todo: list[tuple[int, Example]], seed: int, keep, concurrent: int = 1) -> None:
    """`keep(record)` for each (index, example) of `todo`: one at a time, or `concurrent` at once where the attack
    can share its victim's calls (`keep` is then called from several threads)."""
    if concurrent > 1 and len(todo) > 1 and getattr(attack, "shares_calls", False):
        _attack_concurrently(attack, todo, seed, keep, concurrent)
    else:
        for index, example in todo:
            keep(_attack_one(attack, example, index, seed))


def _attack_one(attack, example: Example, index: int, seed: int) -> AttackRecord:
    try:
        return attack.run(example, index, seed)
    except RobustftError:
        raise  # a missing resource or bad setting stops the run with its message
    except Exception as exc:  # one bad example must not lose the run: record it and go on
        log.error("example %d (%s) failed:\n%s", index, example.id, traceback.format_exc())
        return AttackRecord(
            index=index,
            id=example.id,
            label=example.label,
            result=ERROR,
            original=example.field(attack.field) or "",
            adversarial="",
            perturbed_field=attack.field,
            reason=f"{type(exc).__name__}: {exc}",
        )


class _SharedClock:
    """Each example's share of the working time (pauses left out, robustft.clock): while k examples are in flight, each
    is charged 1/k of it."""

    def __init__(self):
        self._lock, self._last, self._charged = threading.Lock(), working_seconds(), {}

    def _advance(self) -> None:  # called with the lock held
        now = working_seconds()
        if self._charged:
            share = (now - self._last) / len(self._charged)
            for index in self._charged:
                self._charged[index] += share
        self._last = now

    def start(self, index: int) -> None:
        with self._lock:
            self._advance()
            self._charged[index] = 0.0

    def stop(self, index: int) -> float:
        with self._lock:
            self._advance()
            return self._charged.pop(index)


def _attack_concurrently(attack, todo: list[tuple[int, Example]], seed: int, keep, concurrent: int) -> None:
    """`concurrent` threads take the next example as they finish one, while this thread runs their model calls; the
    first error that stops a run stops them all (after their current example) and is raised here."""
    queue, stopped, clock = iter(todo), [], _SharedClock()

    def work(lockstep) -> None:
        try:
            with lockstep.member():  # one member runs at a time between model calls
                for index, example in queue:
                    if stopped:
                        return
                    clock.start(index)
                    record = _attack_one(attack, example, index, seed)
                    record.seconds = round(clock.stop(index), 4)
                    keep(record)
        except BaseException as exc:
            stopped.append(exc)

    n = min(concurrent, len(todo))
    with attack.victim.share_calls(n) as lockstep:
        workers = [threading.Thread(target=work, args=(lockstep,), name=f"attack-{i}", daemon=True) for i in range(n)]
        for w in workers:
            w.start()
        try:
            lockstep.serve()  # the model runs in this thread, as without sharing
        except BaseException as exc:  # e.g. Ctrl-C: the workers stop after their current example
            stopped.append(exc)
            raise
        for w in workers:
            w.join()
    if stopped:
        raise stopped[0]
