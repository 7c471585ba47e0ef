"""Cost of IM-BERT against plain MiniLM: forward and training-step time and peak memory, per K, layer set
and gradient mode. Each configuration runs in its own process so peak memory is its own.

    python benchmarks/im_overhead.py                 # full grid -> benchmarks/results/im_overhead.json
    python benchmarks/im_overhead.py --quick         # a smaller grid
    python benchmarks/im_overhead.py --gradients     # what an adversary sees -> results/im_input_gradient.json

Batch: the first 32 SST-2 dev sentences (padded to the longest), bf16 autocast as in training, 1 thread.
Memory on CPU is the rise of the process's peak resident set over the loaded model (ru_maxrss); on CUDA
it is torch.cuda.max_memory_allocated above the model.

The floor: after its own measurement (so its peak memory is unaffected), every process loads the plain model
and times the same forward and training step on the same batch, alternating plain and converted model step
by step; `forward_x` / `train_step_x` are the converted model's medians over that floor's, from one process.
The grid runs `--repeats` times (default 2) with the 1-minute load average recorded before and after each row.

--gradients: the gradient of the cross-entropy with respect to the input word embeddings (what every
embedding or hull adversary ascends) under each IM gradient mode, against the exact (unrolled) one:
cosine, norm ratio, and the time of one such gradient (the cost of one adversary step). Sizes: a tiny
random BERT (2 layers, hidden 64, initializer range 0.2) on 8 SST-2 dev sentences, and MiniLM on the
same 8 sentences (fp32, 1 thread, median of 2 timed repetitions after a warm-up).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).parent / "results" / "im_overhead.json"
GRADIENT_RESULTS = Path(__file__).parent / "results" / "im_input_gradient.json"
GRADIENT_SETTINGS = ({"K": 2, "eta": 0.01}, {"K": 5, "eta": 0.05})  # the default, and a far-from-exact case


# The settings the screening picked (docs/im_screening.md) and the studies train (configs/im-*.yaml).
PICKED = tuple(
    {"arch": "im", "form": "increment", "dt": dt, "layers": "4-6", "solver": "anderson", "K": 10, "grad": grad}
    for dt in (1.0, 0.5)
    for grad in ("explicit", "unrolled")
)


def grid(quick: bool) -> list[dict]:
    configs = [{"arch": "plain"}, {"arch": "ex", "layers": "1-6", "form": "layer"}, *PICKED]
    ks = (1, 3) if quick else (1, 3, 5)
    layer_sets = ("6", "1-6") if quick else ("6", "4-6", "1-6")
    for layers in layer_sets:
        for k in ks:
            for grad in ("unrolled", "jfb", "explicit"):
                configs.append({"arch": "im", "layers": layers, "K": k, "grad": grad, "eta": 0.01})
    return configs


def measure(config: dict, batch_size: int, steps: int) -> dict:
    import torch

    from robustft.data.batching import collate, encode
    from robustft.data.tasks import load_examples
    from robustft.models.factory import load_classifier
    from robustft.models.im import convert, im_stats

    torch.set_num_threads(1)
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model, tok = load_classifier("minilm", ("negative", "positive"))
    if config["arch"] != "plain":
        convert(model, **config)
    model.to(device)
    examples = load_examples("sst2", "dev", n=batch_size, seed=0)
    batch = collate(encode(tok, examples, 128), tok.pad_token_id)
    inputs = {k: batch[k].to(device) for k in ("input_ids", "attention_mask", "token_type_ids") if k in batch}
    labels = batch["labels"].to(device)

    def peak_bytes():
        if device.type == "cuda":
            return torch.cuda.max_memory_allocated()
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

    def step_functions(net):
        optimizer = torch.optim.AdamW(net.parameters(), lr=1e-5)

        def forward():
            with torch.no_grad(), torch.autocast(device.type, dtype=torch.bfloat16):
                net.eval()(**inputs)

        def train_step():
            net.train()
            with torch.autocast(device.type, dtype=torch.bfloat16):
                loss = net(**inputs, labels=labels).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)

        return {"forward": forward, "train_step": train_step}

    def timed(fn) -> float:
        start = time.perf_counter()
        fn()
        if device.type == "cuda":
            torch.cuda.synchronize()
        return time.perf_counter() - start

    results = {}
    steps_of = step_functions(model)
    base = peak_bytes()
    for name in ("forward", "train_step"):  # forward first: its peak is lower
        timed(steps_of[name])  # warm-up, and the peak
        results[f"{name}_peak_mib"] = round((peak_bytes() - base) / 2**20, 1)
    floor_of = None
    if config["arch"] != "plain":  # loaded after the peaks are read, so they stay the converted model's own
        floor_of = step_functions(load_classifier("minilm", ("negative", "positive"))[0].to(device))
        for fn in floor_of.values():
            timed(fn)  # warm-up
    for name in ("forward", "train_step"):
        times, floor_times = [], []
        for _ in range(steps):  # alternating, so both see the same load
            times.append(timed(steps_of[name]))
            if floor_of is not None:
                floor_times.append(timed(floor_of[name]))
        results[f"{name}_s"] = round(statistics.median(times), 4)
        if floor_of is not None:
            results[f"floor_{name}_s"] = round(statistics.median(floor_times), 4)
            results[f"{name}_x"] = round(results[f"{name}_s"] / results[f"floor_{name}_s"], 2)
    stats = im_stats(model)
    results["diverged"] = sum(s["diverged"] for s in stats.values())
    results["tokens"] = int(inputs["input_ids"].numel())
    results["device"] = device.type
    return results


def input_gradients(backbone: str, n: int, steps: int) -> list[dict]:
    """Cosine and norm ratio of each mode's input-embedding gradient to the exact one, and its time."""
    import torch
    import torch.nn.functional as F

    from robustft.adversary.embeds import forward_embeds, word_embeddings
    from robustft.data.batching import collate, encode
    from robustft.data.tasks import load_examples
    from robustft.models.factory import load_classifier, tiny_bert
    from robustft.models.im import convert, im_stats, reset_im_stats

    torch.set_num_threads(1)
    torch.manual_seed(0)
    if backbone == "tiny":
        model, tok = tiny_bert(2, seed=0, initializer_range=0.2)
    else:
        model, tok = load_classifier(backbone, ("negative", "positive"))
    model.eval()
    batch = collate(encode(tok, load_examples("sst2", "dev", n=n, seed=0), 128), tok.pad_token_id)

    def gradient():
        embeds = word_embeddings(model, batch).detach().requires_grad_()
        loss = F.cross_entropy(forward_embeds(model, batch, embeds).float(), batch["labels"])
        return torch.autograd.grad(loss, embeds)[0]

    rows = []
    for setting in GRADIENT_SETTINGS:
        grads, times = {}, {}
        for grad in ("unrolled", "explicit", "jfb"):
            convert(model, arch="im", layers="all", grad=grad, **setting)
            reset_im_stats(model)
            grads[grad] = gradient()  # warm-up
            timed = []
            for _ in range(steps):
                start = time.perf_counter()
                gradient()
                timed.append(time.perf_counter() - start)
            times[grad] = statistics.median(timed)
            diverged = sum(s["diverged"] for s in im_stats(model).values())
        exact = grads["unrolled"].flatten()
        for grad, g in grads.items():
            rows.append(
                {
                    "backbone": backbone,
                    "examples": n,
                    "tokens": int(batch["input_ids"].numel()),
                    "layers": "all",
                    **setting,
                    "grad": grad,
                    "cosine_to_exact": round(float(F.cosine_similarity(g.flatten(), exact, dim=0)), 4),
                    "norm_ratio_to_exact": round(float(g.norm() / exact.norm()), 4),
                    "input_gradient_s": round(times[grad], 4),
                    "time_x_exact": round(times[grad] / times["unrolled"], 3),
                    "diverged": diverged,
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2, help="runs of the whole grid")
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--one", help=argparse.SUPPRESS)  # a JSON config: measure it in this process
    parser.add_argument("--gradients", action="store_true", help="input-gradient cosine and cost per mode")
    parser.add_argument("--gradient_backbones", default="tiny,minilm")
    args = parser.parse_args()
    if args.gradients:
        rows = [row for backbone in args.gradient_backbones.split(",") for row in input_gradients(backbone, 8, 2)]
        GRADIENT_RESULTS.parent.mkdir(parents=True, exist_ok=True)
        GRADIENT_RESULTS.write_text(
            json.dumps(
                {
                    "threads": 1,
                    "dtype": "float32",
                    "timed_repetitions": 2,
                    "load_average_1m": os.getloadavg()[0],
                    "rows": rows,
                },
                indent=2,
            )
        )
        print(f"wrote {GRADIENT_RESULTS}")
        return 0
    if args.one:
        print(json.dumps(measure(json.loads(args.one), args.batch_size, args.steps)))
        return 0
    rows = []
    for repeat in range(args.repeats):
        for config in grid(args.quick):
            cmd = [sys.executable, __file__, "--one", json.dumps(config)]
            cmd += ["--batch_size", str(args.batch_size), "--steps", str(args.steps)]
            load_before = os.getloadavg()[0]
            out = subprocess.run(cmd, capture_output=True, text=True, env=os.environ, check=True)
            row = {"repeat": repeat, **config, **json.loads(out.stdout.strip().splitlines()[-1])}
            row["load_average_1m"] = [round(load_before, 2), round(os.getloadavg()[0], 2)]
            rows.append(row)
            print(json.dumps(row), flush=True)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    document = {"batch_size": args.batch_size, "threads": 1, "bf16": True, "steps": args.steps, "rows": rows}
    args.output.write_text(json.dumps(document, indent=2))
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
