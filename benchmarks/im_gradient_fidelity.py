"""How far each IM gradient mode's training gradient is from the exact one, on real backbones and a real batch.

    nice python benchmarks/im_gradient_fidelity.py                     # MiniLM and MPNet -> results/<this name>.json
    nice python benchmarks/im_gradient_fidelity.py --backbones minilm  # one (MPNet needs `robustft fetch mpnet`)

For each backbone and IM setting (the studies' setting: increment form, dt 1, K 10, the upper half of the layers,
under each solver; and the code's K 2 gradient-descent setting of the presets), every gradient mode takes one
training step's gradient of the cross-entropy on one batch of SST-2 training examples with their labels, and is
compared with the unrolled (exact) gradient of the same setting: cosine and relative norm of the gradient of every
encoder weight (all layers' parameters, and MPNet's relative position bias), time of one step (forward and
backward, median of `--repeats` after one warm-up) and peak memory (the highest resident set during the warm-up
step, sampled every 2 ms, over the one before it; each row in its own process). The plain encoder's row is the
floor. Settings: fp32 (so that the comparison is not bf16 noise), train mode with the same dropout masks in every
row (seeded), a freshly initialised head seeded identically, `--threads` torch threads.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from common import load_average, save

NAME = "im_gradient_fidelity"
# the first is the exact reference; recompute (activation checkpointing) changes memory and time, not the gradient
MODES = ({"grad": "unrolled"}, {"grad": "unrolled", "recompute": True}, {"grad": "jfb"}, {"grad": "explicit"})
STUDY = {"arch": "im", "form": "increment", "dt": 1.0, "layers": "upper-half", "K": 10}
SETTINGS = (
    {**STUDY, "solver": "anderson"},  # the powered studies' setting (configs/im-powered.yaml)
    {**STUDY, "solver": "gd", "eta": 0.01},
    {**STUDY, "solver": "gd-backtracking", "eta": 0.01},
    {"arch": "im", "form": "increment", "dt": 1.0, "layers": "upper-half", "K": 2, "solver": "gd", "eta": 0.01},
)


def measure(backbone: str, setting: dict, args, grad_file: Path) -> dict:
    """One row, in this process: the step's time and peak memory; the encoder gradient saved to `grad_file`."""
    import torch

    from robustft.data.batching import collate, encode, model_inputs
    from robustft.data.tasks import get_task, load_examples
    from robustft.models.factory import load_classifier
    from robustft.models.im import convert, im_stats

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model, tok = load_classifier(backbone, get_task("sst2").label_names)
    if setting["arch"] != "plain":
        convert(model, **setting)
    examples = load_examples("sst2", "train", n=args.batch_size, seed=0)
    batch = collate(encode(tok, examples, args.max_length), tok.pad_token_id)
    inputs, labels = model_inputs(batch), batch["labels"]
    encoder = model.base_model.encoder
    model.train()

    def step() -> float:
        model.zero_grad(set_to_none=True)
        torch.manual_seed(1)  # the same dropout masks in every row
        start = time.perf_counter()
        model(**inputs, labels=labels).loss.backward()
        return time.perf_counter() - start

    peak, _ = peak_rise(step)  # the first step: its memory (the peak of a later one hides in the allocator's cache)
    times = [step() for _ in range(args.repeats)]
    grads = [p.grad.flatten() for p in encoder.parameters() if p.grad is not None]
    torch.save(torch.cat(grads).float(), grad_file)
    stats = im_stats(model)
    return {
        "backbone": backbone,
        **setting,
        "step_s": round(statistics.median(times), 3),
        "peak_mib": round(peak / 2**20, 1),
        "diverged": sum(s["diverged"] for s in stats.values()),
        "final_relative_residual": max((s["last_relative_residual"][-1] for s in stats.values()), default=None),
        "tokens": int(inputs["input_ids"].numel()),
    }


def resident_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def peak_rise(fn):
    """(the highest resident set while `fn` runs, sampled every 2 ms, minus the one before it; fn's result)"""
    before, highest, done = resident_bytes(), [0], threading.Event()

    def sample():
        while not done.is_set():
            highest[0] = max(highest[0], resident_bytes())
            time.sleep(0.002)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        result = fn()
    finally:
        done.set()
        sampler.join()
    return max(highest[0], resident_bytes()) - before, result


def child(backbone: str, setting: dict, args, grad_file: Path) -> dict:
    """`measure` in a fresh process (its own peak memory)."""
    command = [sys.executable, __file__, "--child", json.dumps({"backbone": backbone, "setting": setting})]
    command += ["--grad_file", str(grad_file), "--batch_size", str(args.batch_size)]
    command += ["--max_length", str(args.max_length), "--threads", str(args.threads), "--repeats", str(args.repeats)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{backbone} {setting} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def compare(grad_file: Path, exact_file: Path) -> dict:
    import torch

    g, exact = torch.load(grad_file), torch.load(exact_file)
    cosine = torch.nn.functional.cosine_similarity(g.double(), exact.double(), dim=0)
    return {"cosine_to_exact": round(float(cosine), 4), "norm_to_exact": round(float(g.norm() / exact.norm()), 4)}


def rows_of(backbone: str, args, work: Path) -> list[dict]:
    plain = child(backbone, {"arch": "plain"}, args, work / "plain.pt")
    print(json.dumps(plain), flush=True)
    rows = [plain]
    for setting in SETTINGS:
        exact_file = work / "exact.pt"
        for mode in MODES:
            if mode.get("recompute") and setting["solver"] != "anderson":
                continue  # only the anderson solve recomputes
            grad_file = exact_file if mode == MODES[0] else work / "mode.pt"
            row = child(backbone, {**setting, **mode}, args, grad_file)
            row.update(compare(grad_file, exact_file))
            row["step_x_plain"] = round(row["step_s"] / plain["step_s"], 2)
            print(json.dumps(row), flush=True)
            rows.append(row)
    return rows


def table(rows: list[dict]) -> str:
    lines = ["| backbone | solver | K | grad | cosine | norm | step s | x plain | peak MiB | diverged |"]
    lines.append("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if r["arch"] == "plain":
            lines.append(f"| {r['backbone']} | plain | - | - | - | - | {r['step_s']} | 1 | {r['peak_mib']} | - |")
            continue
        grad = r["grad"] + (" + recompute" if r.get("recompute") else "")
        lines.append(
            f"| {r['backbone']} | {r['solver']} | {r['K']} | {grad} | {r['cosine_to_exact']} | "
            f"{r['norm_to_exact']} | {r['step_s']} | {r['step_x_plain']} | {r['peak_mib']} | {r['diverged']} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backbones", nargs="+", default=["minilm", "mpnet"])
    parser.add_argument("--batch_size", type=int, default=16)
    parser.add_argument("--max_length", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (2 thrash when the cores are shared)")
    parser.add_argument("--repeats", type=int, default=1, help="timed steps after the warm-up (median)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--grad_file", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        spec = json.loads(args.child)
        print(json.dumps(measure(spec["backbone"], spec["setting"], args, Path(args.grad_file))))
        return 0
    from robustft.runtime import machine

    load_before = load_average()
    with tempfile.TemporaryDirectory(prefix="im_fidelity_") as tmp:
        rows = [row for backbone in args.backbones for row in rows_of(backbone, args, Path(tmp))]
    print(table(rows))
    save(
        NAME,
        {
            "date": datetime.date.today().isoformat(),
            "machine": machine(),
            "settings": {
                "task": "sst2 train, seeded sample (seed 0), real labels",
                "batch_size": args.batch_size,
                "max_length": args.max_length,
                "precision": "fp32",
                "threads": args.threads,
                "repeats": args.repeats,
                "gradient": "every encoder parameter, flattened; against grad unrolled of the same setting",
                "niceness": os.nice(0),
            },
            "load_average_1m_before": load_before,
            "rows": rows,
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
