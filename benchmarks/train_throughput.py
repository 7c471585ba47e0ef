"""Training throughput of MiniLM on SST-2 through the real loop: fp32 vs bf16, dynamic vs max-length padding.

    python benchmarks/train_throughput.py [--n 320] [--max_length 128]

Examples/s counts only optimizer work (dev evaluation and checkpoints excluded). The load average is saved
with the numbers: on a shared machine, compare configurations from one run, not across runs.
"""

from __future__ import annotations

import argparse
import json
import tempfile

from common import save
from robustft.config import TrainConfig
from robustft.train.loop import train


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=320, help="training examples (one epoch)")
    parser.add_argument("--max_length", type=int, default=128)
    args = parser.parse_args()
    rows = []
    for bf16 in (False, True):
        for pad_to_max in (True, False):
            with tempfile.TemporaryDirectory() as out:
                precision = "bf16" if bf16 else "fp32"
                cfg = TrainConfig(n_train=args.n, n_dev=32, epochs=1, precision=precision, pad_to_max_length=pad_to_max,
                                  max_length=args.max_length, checkpoint_every=0, output_dir=out)
                run = train(cfg, progress=False)
                metrics = json.loads((run / "metrics.json").read_text())
            row = {"precision": "bf16" if bf16 else "fp32", "padding": "max_length" if pad_to_max else "dynamic",
                   "examples_per_s": metrics["train_examples_per_s"], "train_time_s": metrics["train_time_s"]}
            rows.append(row)
            print(row)
    base = rows[0]["examples_per_s"]
    for row in rows:
        row["speedup_vs_fp32_maxpad"] = round(row["examples_per_s"] / base, 2)
    save("train_throughput", {"model": "minilm", "task": "sst2", "n_train": args.n, "max_length": args.max_length,
                              "batch_size": TrainConfig().batch_size, "rows": rows})


if __name__ == "__main__":
    main()
