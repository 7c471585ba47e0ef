"""Stream an attack through its run folder: one JSONL line per example, appended and fsync'd as it finishes, so a
crash loses nothing; `resume` keeps the finished records and attacks the rest (errored examples again). Per-example
seeds depend only on (seed, index), so a resumed run gives the same records as an uninterrupted one, and a shard
(every n-th example from i) gives the same records as one process.
"""

from __future__ import annotations

import dataclasses
import logging
import time
import traceback

from robustft import runs
from robustft.attacks.results import ERROR, AttackRecord, summarize, write_csv
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


def finish(run: runs.Run, records: list[AttackRecord], total: int, seconds: float) -> dict:
    records = sorted(records, key=lambda r: r.index)
    summary = summarize(records)
    summary["wall_seconds_this_session"] = round(seconds, 2)
    if run.shard is None:  # a shard's CSV is written by the merge, for the whole run
        write_csv(records, run.path / CSV)
    done = {r.index for r in records if r.result != ERROR}
    return run.write_metrics(summary, complete=len(done) == total)


def merged_summary(records: list[dict], shard_metrics: list[dict]) -> dict:
    """metrics.json of a merged sharded attack: the summary one process gives (its wall time: the slowest shard)."""
    summary = summarize(sorted(map(AttackRecord.from_dict, records), key=lambda r: r.index))
    summary["wall_seconds_this_session"] = max(m.get("wall_seconds_this_session", 0.0) for m in shard_metrics)
    return summary


def merged_csv(path, records: list[dict]) -> None:
    write_csv(sorted(map(AttackRecord.from_dict, records), key=lambda r: r.index), path / CSV)


def run_attack(
    attack, examples: list[Example], run: runs.Run, seed: int = 0, progress: bool = True, first: int | None = None
) -> tuple[list[AttackRecord], dict]:
    """Attack every example of this run (of its shard: `run.shard`) not yet in the run folder, appending each record
    as it finishes.

    `first` stops after the first `first` examples of the sample (a later resume does the rest); metrics.json then
    covers the records done so far and says `complete: false`.
    """
    records = [r for r in map(AttackRecord.from_dict, run.records()) if r.result != ERROR]  # errors are retried
    finished = {r.index for r in records}
    mine = runs.shard_indices(len(examples), run.shard)
    stop = len(examples) if first is None else min(first, len(examples))
    todo = [(i, examples[i]) for i in mine if i < stop and i not in finished]
    start = time.perf_counter()
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
    for index, example in todo:
        try:
            record = attack.run(example, index, seed)
        except RobustftError:
            raise  # a missing resource or bad setting stops the run with its message
        except Exception as exc:  # one bad example must not lose the run: record it and go on
            log.error("example %d (%s) failed:\n%s", index, example.id, traceback.format_exc())
            record = AttackRecord(
                index=index,
                id=example.id,
                label=example.label,
                result=ERROR,
                original=example.field(attack.field) or "",
                adversarial="",
                perturbed_field=attack.field,
                reason=f"{type(exc).__name__}: {exc}",
            )
        run.append(dataclasses.asdict(record))
        records.append(record)
        if bar is not None:
            bar.update(1)
            bar.set_postfix(_postfix(records), refresh=False)
    if bar is not None:
        bar.close()
    summary = finish(run, records, len(mine), time.perf_counter() - start)
    return sorted(records, key=lambda r: r.index), summary
