"""Several cores, two ways to use them: one process with every thread, or one process per core with one thread
each (what `--shard i/n` or torchrun give an attack), both attacking the same seeded SST-2 dev examples with
`--concurrent` examples at once per process, and both held against the best floor this machine has for the
run's rows: the rows forwarded by one process with every thread, or split among the processes and forwarded by
all of them at once with one thread each (the faster of the two).

Each configuration runs `--repeats` times, interleaved. The processes start together after their warm-up
example (a barrier), so model loading is outside the timing, as in attack_speed.py; their wall time is the
slowest one's. Records must be the same in both configurations (the JSON says whether they are).

    python benchmarks/attack_processes.py --model RUN --recipes textfooler pwws --precisions bf16 --n 100

Prints a table and saves benchmarks/results/<name>.json with the load average before and after.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as the CLI sets it, before torch loads

import argparse  # noqa: E402
import multiprocessing as mp  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from attack_speed import ideal_floor, measure, records_digest  # noqa: E402
from common import load_average, load_sst2_victim, save  # noqa: E402
from robustft.attacks.recipes import RECIPES  # noqa: E402
from robustft.attacks.victim import Victim  # noqa: E402
from robustft.data.tasks import load_examples  # noqa: E402


def _setup(args):
    model, tok = load_sst2_victim(args.model)
    examples = load_examples("sst2", "dev", n=args.n + 1, seed=0)
    mlm = None
    if {"bert-attack", "genetic"} & set(args.recipes):
        from robustft.models.mlm import load_masked_lm

        mlm = load_masked_lm(args.mlm)
    return model, tok, examples[0], examples[1:], mlm


def _worker(args, rank: int, processes: int, recipe: str, precision: str, barrier, results) -> None:
    """One process of `processes`, one thread: attacks examples rank, rank + processes, ...; then, once every
    process has finished attacking, times the ideal floor of its own rows while the others time theirs (`measure`
    meets them there)."""
    torch.set_num_threads(1)
    model, tok, warmup, examples, mlm = _setup(args)
    mine = list(range(rank, len(examples), processes))
    row, records, rows = measure(
        recipe,
        model,
        tok,
        [examples[i] for i in mine],
        warmup,
        "fast",
        precision,
        mlm,
        args,
        None,
        concurrent=args.concurrent,
        wait=barrier.wait,
        indices=mine,
    )
    results.put((rank, row, records, rows))


def in_processes(args, recipe: str, precision: str) -> tuple[dict, list, list, float]:
    """The run in `args.processes` processes of one thread: its row (wall = the slowest process), records, rows and
    the parallel floor (the slowest process's floor of its share)."""
    ctx = mp.get_context("spawn")
    barrier, results = ctx.Barrier(args.processes), ctx.Queue()
    procs = [
        ctx.Process(target=_worker, args=(args, r, args.processes, recipe, precision, barrier, results))
        for r in range(args.processes)
    ]
    for p in procs:
        p.start()
    parts = sorted((results.get() for _ in procs), key=lambda part: part[0])
    for p in procs:
        p.join()
        if p.exitcode:
            raise RuntimeError(f"a benchmark process exited with {p.exitcode}")
    records = sorted((r for part in parts for r in part[2]), key=lambda r: r.index)
    rows = [row for part in parts for row in part[3]]
    attacked = sum(part[1]["attacked"] for part in parts)
    wall = max(part[1]["wall_s"] for part in parts)
    row = {
        "wall_s": round(wall, 3),
        "attacked": attacked,
        "s_per_attacked_example": round(wall / attacked, 3) if attacked else None,
        "per_process_wall_s": [part[1]["wall_s"] for part in parts],
        "forward_calls": sum(part[1]["forward_calls"] for part in parts),
    }
    return row, records, rows, max(part[1]["floor_ideal_set_s"] for part in parts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="minilm", help="run folder, model folder or alias (minilm: random head)")
    ap.add_argument("--recipes", nargs="+", default=["textfooler"], choices=sorted(set(RECIPES) - {"ascc"}))
    ap.add_argument("--precisions", nargs="+", default=["bf16"])
    ap.add_argument("--n", type=int, default=100, help="examples (SST-2 dev, seeded)")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--processes", type=int, default=os.cpu_count() or 2, help="processes of one thread each")
    ap.add_argument("--concurrent", type=int, default=8, help="examples attacked at once in each process")
    ap.add_argument("--batch-size", type=int, default=64, help="the ideal floor's batches")
    ap.add_argument("--mlm", default=None)
    ap.add_argument("--query-budget", type=int, default=None)
    ap.add_argument("--name", default="attack_processes", help="results/<name>.json")
    args = ap.parse_args()
    threads = args.processes  # the single process gets every core the processes get
    torch.set_num_threads(threads)
    load_before = load_average()
    command = "python benchmarks/" + Path(__file__).name + " " + " ".join(sys.argv[1:])
    model, tok, warmup, examples, mlm = _setup(args)
    runs, same = [], {}
    for repeat in range(args.repeats):
        for recipe in args.recipes:
            for precision in args.precisions:
                start = time.perf_counter()
                one, one_records, _ = measure(
                    recipe, model, tok, examples, warmup, "fast", precision, mlm, args, None, concurrent=args.concurrent
                )
                many, many_records, rows, parallel_floor = in_processes(args, recipe, precision)
                victim = Victim(model, tok, "sst2", batch_size=args.batch_size, precision=precision)
                one_process_floor = ideal_floor(model, tok, rows, victim, args.batch_size, None)[0]
                best = min(one_process_floor, parallel_floor)
                digest_one, digest_many = records_digest(one_records), records_digest(many_records)
                same[f"{recipe}/{precision}"] = same.get(f"{recipe}/{precision}", True) and digest_one == digest_many
                for config, row, digest in (
                    (f"1 process x {threads} threads", one, digest_one),
                    (f"{args.processes} x 1 thread", many, digest_many),
                ):
                    runs.append(
                        {
                            "recipe": recipe,
                            "precision": precision,
                            "repeat": repeat,
                            "config": config,
                            "concurrent_examples": args.concurrent,
                            "wall_s": row["wall_s"],
                            "attacked": row["attacked"],
                            "s_per_attacked_example": row["s_per_attacked_example"],
                            "forward_calls": row["forward_calls"],
                            "per_process_wall_s": row.get("per_process_wall_s"),
                            "floor_one_process_s": round(one_process_floor, 3),
                            "floor_parallel_processes_s": round(parallel_floor, 3),
                            "x_best_floor": round(row["wall_s"] / best, 2),
                            "records_digest": digest,
                        }
                    )
                    r = runs[-1]
                    print(
                        f"{recipe:10s} {precision:5s} rep {repeat} {config:24s}: "
                        f"{r['s_per_attacked_example']} s/att ex, "
                        f"{r['x_best_floor']}x the best floor (one process {r['floor_one_process_s']} s, "
                        f"{args.processes} in parallel {r['floor_parallel_processes_s']} s)",
                        flush=True,
                    )
                print(f"  ({time.perf_counter() - start:.0f} s)", flush=True)
    save(
        args.name,
        {
            "command": command,
            "model": args.model,
            "task": "sst2",
            "split": "dev",
            "seed": 0,
            "n": args.n,
            "processes": args.processes,
            "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
            "load_average_before": load_before,
            "load_average_after": load_average(),
            "same_records_in_both_configs": same,
            "runs": runs,
        },
    )


if __name__ == "__main__":
    main()
