"""Cost of each training objective relative to standard fine-tuning: seconds per optimizer step and peak
extra memory, MiniLM, one fixed class-balanced IMDB batch, bf16 autocast as in the training loop.

    python benchmarks/objective_cost.py [--batch 8] [--max_length 128] [--steps 3] [--threads 1]
    python benchmarks/objective_cost.py --methods freelbpp --method_args '{"steps": 10}' --output freelb_graph

Each objective runs in a fresh subprocess so memory peaks do not mix. In the same subprocess, after each
objective step, the floor (a plain cross-entropy forward + backward of the same model and batch) is timed:
`x_floor` = objective step / floor, a ratio that holds on a loaded machine. Memory: on CPU the peak resident
set size, sampled every 5 ms, minus the resident size just before the objective's set-up (so RIFT's
frozen teacher counts); on CUDA the peak allocated bytes minus the allocation before set-up. On a shared
machine compare rows of one run (the load average is saved with the numbers).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time

METHODS = ("standard", "pgd", "freelb", "freelbpp", "trades", "ascc", "rift", "infobert")


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class PeakRss:
    """Samples the resident set size in a thread; `peak` is the largest value seen."""

    def __init__(self, every_s: float = 0.005):
        self.peak, self.every_s, self._stop = rss_bytes(), every_s, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, rss_bytes())
            time.sleep(self.every_s)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss_bytes())


def measure(method: str, batch_size: int, max_length: int, steps: int, threads: int, method_args: dict) -> dict:
    import torch

    from robustft import runtime
    from robustft.data.batching import collate, encode, model_inputs
    from robustft.data.tasks import get_task, load_examples
    from robustft.models.factory import load_classifier
    from robustft.training.objectives import build_objective
    from robustft.training.objectives.base import TrainContext

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    task = get_task("imdb")
    model, tok = load_classifier("minilm", task.label_names)
    model.to(device).train()
    examples = load_examples("imdb", "train", per_class=batch_size // 2, seed=0)
    batch = collate(encode(tok, examples, max_length), tok.pad_token_id, pad_to=max_length)
    batch = {k: v.to(device) if torch.is_tensor(v) else v for k, v in batch.items()}

    before = torch.cuda.memory_allocated() if device.type == "cuda" else rss_bytes()
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    with PeakRss() as rss:
        objective = build_objective(method, method_args)
        objective.setup(model, TrainContext(tok, task, "minilm", device=device))
        modules = [model, *objective.modules().values()]
        optimizer = torch.optim.AdamW([p for m in modules for p in m.parameters() if p.requires_grad], lr=2e-5)
        times, floor_times = [], []

        def floor_step() -> None:
            """The floor: plain cross-entropy forward + backward of the same model and batch (no optimizer
            step, so the objective's weights are left alone), interleaved with the objective's steps."""
            with runtime.autocast(device, "bf16"):
                logits = model(**model_inputs(batch)).logits
            torch.nn.functional.cross_entropy(logits.float(), batch["labels"]).backward()
            model.zero_grad(set_to_none=True)

        for step in range(steps + 1):  # the first step warms up and is not timed
            started = time.perf_counter()
            with runtime.autocast(device, "bf16"):
                loss, _ = objective.loss(model, batch)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            if device.type == "cuda":
                torch.cuda.synchronize()
            if step:
                times.append(time.perf_counter() - started)
            started = time.perf_counter()
            floor_step()
            if device.type == "cuda":
                torch.cuda.synchronize()
            if step:
                floor_times.append(time.perf_counter() - started)
    peak = (torch.cuda.max_memory_allocated() if device.type == "cuda" else rss.peak) - before
    row = {
        "method": method,
        "method_args": method_args,
        "seconds_per_step": sum(times) / len(times),
        "step_seconds": times,
        "floor_forward_backward_s": sum(floor_times) / len(floor_times),
        "x_floor": round(sum(times) / sum(floor_times), 2),
        "peak_extra_mb": peak / 2**20,
        "device": device.type,
        "final_loss": loss.item(),
    }
    if hasattr(objective, "teacher_bytes"):
        row["teacher_mb"] = objective.teacher_bytes / 2**20
    if hasattr(objective, "coverage"):
        row["candidates_kept_dropped"] = dict(objective.coverage)
    return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--max_length", type=int, default=128)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--method_args", default="{}", help="JSON method_args given to every method")
    parser.add_argument("--output", default="objective_cost", help="name of the JSON under benchmarks/results/")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # child mode: measure one method, print JSON
    args = parser.parse_args()
    if args.one:
        print(
            json.dumps(
                measure(args.one, args.batch, args.max_length, args.steps, args.threads, json.loads(args.method_args))
            )
        )
        return

    sys.path.insert(0, os.path.dirname(__file__))
    from common import save

    rows, load_before = [], os.getloadavg()[0]
    for method in args.methods.split(","):
        out = subprocess.run(
            [
                sys.executable,
                __file__,
                "--one",
                method,
                "--batch",
                str(args.batch),
                "--max_length",
                str(args.max_length),
                "--steps",
                str(args.steps),
                "--threads",
                str(args.threads),
                "--method_args",
                args.method_args,
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        row = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append(row)
        print(
            f"{method:10s} {row['seconds_per_step']:7.2f} s/step ({row['x_floor']}x its floor) "
            f"peak +{row['peak_extra_mb']:7.0f} MiB",
            flush=True,
        )
    base = next((r for r in rows if r["method"] == "standard"), rows[0])
    for row in rows:
        row["time_vs_standard"] = round(row["seconds_per_step"] / base["seconds_per_step"], 2)
        row["memory_vs_standard"] = round(row["peak_extra_mb"] / max(base["peak_extra_mb"], 1e-9), 2)
    save(
        args.output,
        {
            "model": "minilm",
            "task": "imdb",
            "batch_size": args.batch,
            "threads_per_run": args.threads,
            "max_length": args.max_length,
            "padding": "max_length",
            "bf16_autocast": True,
            "timed_steps": args.steps,
            "load_average_before": load_before,
            "load_average_after": os.getloadavg()[0],
            "rows": rows,
        },
    )


if __name__ == "__main__":
    main()
