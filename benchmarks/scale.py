"""Train and attack throughput with 1 and 2 processes (torchrun, gloo on CPU) on this machine, MiniLM on SST-2.

    python benchmarks/scale.py [--n_train 192] [--n_attack 12] [--max_length 64]

Each setting runs as the user would run it (`robustft train` / `robustft attack`, or the same under
`torchrun --standalone --nproc_per_node 2`), in a fresh folder:

- 1 process x 1 thread, 1 process x 2 threads, 2 processes x 1 thread (the machine's 2 cores either way);
- train: examples/s of optimizer work as metrics.json reports it (rank 0's clock over the global batch), and the
  wall time of the whole command (start-up, tokenisation, dev evaluation included);
- attack: PWWS on the first n_attack dev examples of the 1-process model, examples/s over the command's wall time
  (the 2-process run includes its merge).

The 1-minute load average is recorded before and after every run: this machine is shared, so compare the settings
of one invocation, not across invocations.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import save

SETTINGS = [("1 process x 1 thread", 1, 1), ("1 process x 2 threads", 1, 2), ("2 processes x 1 thread", 2, 1)]


def command(processes: int, args: list[str]) -> list[str]:
    if processes == 1:
        return [sys.executable, "-m", "robustft.cli", *args]
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        str(processes),
        "-m",
        "robustft.cli",
        *args,
    ]


def timed(processes: int, threads: int, args: list[str]) -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "TOKENIZERS_PARALLELISM": "false"}
    load_before = os.getloadavg()[0]
    start = time.perf_counter()
    done = subprocess.run(
        command(processes, [*args, "--threads", str(threads), "--progress", "false"]),
        capture_output=True,
        text=True,
        env=env,
    )
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"failed: {' '.join(args)}\n{done.stderr[-3000:]}")
    return {
        "wall_s": round(wall, 2),
        "load_1m_before": round(load_before, 2),
        "load_1m_after": round(os.getloadavg()[0], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n_train", type=int, default=192)
    parser.add_argument("--n_attack", type=int, default=12)
    parser.add_argument("--max_length", type=int, default=64)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        victim = None
        for name, processes, threads in SETTINGS:
            out = Path(tmp) / f"train-{processes}x{threads}"
            row = {
                "verb": "train",
                "setting": name,
                "processes": processes,
                "threads_per_process": threads,
                **timed(
                    processes,
                    threads,
                    [
                        "train",
                        "--n_train",
                        str(args.n_train),
                        "--n_dev",
                        "64",
                        "--epochs",
                        "1",
                        "--batch_size",
                        "32",
                        "--max_length",
                        str(args.max_length),
                        "--checkpoint_every",
                        "0",
                        "--output_dir",
                        str(out),
                    ],
                ),
            }
            metrics = json.loads((out / "metrics.json").read_text())
            row.update(
                examples_per_s=metrics["train_examples_per_s"],
                train_time_s=metrics["train_time_s"],
                precision=metrics["precision"],
                dev_accuracy=metrics["best"]["dev_accuracy"],
            )
            victim = victim or out
            rows.append(row)
            print(row, flush=True)
        for name, processes, threads in SETTINGS:
            out = Path(tmp) / f"attack-{processes}x{threads}"
            row = {
                "verb": "attack",
                "setting": name,
                "processes": processes,
                "threads_per_process": threads,
                **timed(
                    processes,
                    threads,
                    [
                        "attack",
                        "--model",
                        str(victim),
                        "--task",
                        "sst2",
                        "--split",
                        "dev",
                        "--recipe",
                        "pwws",
                        "-n",
                        str(args.n_attack),
                        "--output_dir",
                        str(out),
                    ],
                ),
            }
            metrics = json.loads((out / "metrics.json").read_text())
            row.update(
                examples_per_s=round(args.n_attack / row["wall_s"], 3),
                accuracy_under_attack=metrics["accuracy_under_attack"],
                avg_num_queries=metrics["avg_num_queries"],
            )
            rows.append(row)
            print(row, flush=True)
    save(
        "scale",
        {
            "model": "minilm",
            "task": "sst2",
            "n_train": args.n_train,
            "n_attack": args.n_attack,
            "max_length": args.max_length,
            "batch_size": 32,
            "attack_recipe": "pwws",
            "command": "python benchmarks/scale.py " + " ".join(sys.argv[1:]),
            "rows": rows,
        },
    )


if __name__ == "__main__":
    main()
