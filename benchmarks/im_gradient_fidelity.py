"""How far each IM gradient mode's training gradient is from the exact one, on real backbones and a real batch.

    nice python benchmarks/im_gradient_fidelity.py                     # MiniLM and MPNet -> results/<this name>.json
    nice python benchmarks/im_gradient_fidelity.py --backbones minilm  # one (MPNet needs `robustft fetch mpnet`)
    nice python benchmarks/im_gradient_fidelity.py --settings anderson # the studies' setting only

For each backbone and IM setting (the studies' setting: increment form, dt 1, K 10, the upper half of the layers,
under each solver; and the code's K 2 gradient-descent setting of the presets), every gradient mode takes one
training step's gradient of the cross-entropy on one batch of SST-2 training examples with their labels, and is
compared with the unrolled (exact) gradient of the same setting: cosine and relative norm of the gradient of every
encoder weight (all layers' parameters, and MPNet's relative position bias), and peak memory (the highest resident
set during the step, sampled every 2 ms, over the one before it; each row in its own process). Time: the machine is
shared, so every mode of a backbone is timed in ONE process, interleaved with the plain encoder (per round, each mode
takes one step right after a plain step, `--rounds` rounds); a row's `step_x_plain` is the median over rounds of its
step over the plain step just before it, and the 1-minute load average is recorded before and after. Settings:
fp32 (so that the comparison is not bf16 noise), train mode with the same dropout masks in every row (seeded), a
freshly initialised head seeded identically, `--threads` torch threads.
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
# the first is the exact reference; recompute (activation checkpointing) changes memory and time, not the gradient;
# implicit solves the adjoint fixed point (adjoint_K iterations, default K); adaptive takes the implicit gradient in
# a layer whose solve converged (mean relative residual <= converged_tol, default 0.005) and the unrolled one elsewhere
MODES = (
    {"grad": "unrolled"},
    {"grad": "unrolled", "recompute": True},
    {"grad": "jfb"},
    {"grad": "explicit"},
    {"grad": "implicit", "adjoint_K": 4},
    {"grad": "implicit", "adjoint_K": 6},
    {"grad": "implicit"},
    {"grad": "adaptive"},
)
STUDY = {"arch": "im", "form": "increment", "dt": 1.0, "layers": "upper-half", "K": 10}
SETTINGS = {
    "anderson": {**STUDY, "solver": "anderson"},  # the powered studies' setting (configs/im-powered.yaml)
    "gd": {**STUDY, "solver": "gd", "eta": 0.01},
    "gd-backtracking": {**STUDY, "solver": "gd-backtracking", "eta": 0.01},
    "gd-k2": {
        "arch": "im",
        "form": "increment",
        "dt": 1.0,
        "layers": "upper-half",
        "K": 2,
        "solver": "gd",
        "eta": 0.01,
    },
}


def load(backbone: str, args):
    """(model in train mode, inputs, labels): the seeded head and the seeded SST-2 batch every row uses."""
    import torch

    from robustft.data.batching import collate, encode, model_inputs
    from robustft.data.tasks import get_task, load_examples
    from robustft.models.factory import load_classifier

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model, tok = load_classifier(backbone, get_task("sst2").label_names)
    examples = load_examples("sst2", "train", n=args.batch_size, seed=0)
    batch = collate(encode(tok, examples, args.max_length), tok.pad_token_id)
    model.train()
    return model, model_inputs(batch), batch["labels"]


def timed_step(model, inputs, labels) -> float:
    import torch

    model.zero_grad(set_to_none=True)
    torch.manual_seed(1)  # the same dropout masks in every row
    start = time.perf_counter()
    model(**inputs, labels=labels).loss.backward()
    return time.perf_counter() - start


def measure(backbone: str, setting: dict, args, grad_file: Path) -> dict:
    """One row, in this process: the step's peak memory and solver statistics; the encoder gradient saved to
    `grad_file` (the step is timed in `interleaved_times`, not here)."""
    import torch

    from robustft.models.im import convert, im_stats

    model, inputs, labels = load(backbone, args)
    if setting["arch"] != "plain":
        convert(model, **setting)
    peak, _ = peak_rise(lambda: timed_step(model, inputs, labels))  # the first step (a later one's peak hides in
    # the allocator's cache)
    grads = [p.grad.flatten() for p in model.base_model.encoder.parameters() if p.grad is not None]
    torch.save(torch.cat(grads).float(), grad_file)
    stats = im_stats(model)
    row = {
        "backbone": backbone,
        **setting,
        "peak_mib": round(peak / 2**20, 1),
        "diverged": sum(s["diverged"] for s in stats.values()),
        "final_relative_residual": max((s["last_relative_residual"][-1] for s in stats.values()), default=None),
        "tokens": int(inputs["input_ids"].numel()),
    }
    if setting.get("grad") in ("implicit", "adaptive"):
        # per layer: the final relative residual of the solve and of the adjoint solve, and adaptive's choice
        row["layers_final_residual"] = {k: round(s["last_relative_residual"][-1], 5) for k, s in stats.items()}
        row["layers_adjoint_residual"] = {
            k: round(s["last_adjoint_residual"][-1], 5) if s["last_adjoint_residual"] else None
            for k, s in stats.items()
        }
        if setting["grad"] == "adaptive":
            row["layers_gradient"] = {k: s["last_gradient"] for k, s in stats.items()}
    return row


def interleaved_times(backbone: str, settings: list[dict], args) -> list[dict]:
    """Per setting (index 0 the plain encoder): the median step and the median over rounds of its step over the
    plain step taken right before it (the load moves within a round), every setting stepped once per round, all in
    this one process."""
    from robustft.models.im import convert, unconvert

    model, inputs, labels = load(backbone, args)
    times: list[list[float]] = [[] for _ in settings]
    ratios: list[list[float]] = [[] for _ in settings]
    for _ in range(args.rounds):
        for i, setting in enumerate(settings):
            unconvert(model)
            plain = timed_step(model, inputs, labels)
            if setting["arch"] != "plain":
                convert(model, **setting)
            times[i].append(timed_step(model, inputs, labels))
            ratios[i].append(times[i][-1] / plain)
    return [
        {
            "step_s": round(statistics.median(t), 3),
            "step_x_plain": round(statistics.median(r), 2),
            "step_x_plain_rounds": [round(x, 2) for x in r],
        }
        for t, r in zip(times, ratios, strict=True)
    ]


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
    command += ["--max_length", str(args.max_length), "--threads", str(args.threads)]
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
    rows = [child(backbone, {"arch": "plain"}, args, work / "plain.pt")]
    print(json.dumps(rows[0]), flush=True)
    for name in args.settings:
        setting = SETTINGS[name]
        exact_file = work / "exact.pt"
        for mode in MODES:
            if mode.get("recompute") and (setting["solver"] != "anderson" or not args.recompute):
                continue  # only the anderson solve recomputes
            grad_file = exact_file if mode == MODES[0] else work / "mode.pt"
            row = child(backbone, {**setting, **mode}, args, grad_file)
            row.update(compare(grad_file, exact_file))
            print(json.dumps(row), flush=True)
            rows.append(row)
    load_before = load_average()
    timing = interleaved_times(backbone, [{k: v for k, v in r.items() if k in SETTING_KEYS} for r in rows], args)
    for row, times in zip(rows, timing, strict=True):
        row.update(times, load_average_1m_timing=[load_before, load_average()])
    return rows


SETTING_KEYS = {"arch", "form", "dt", "layers", "K", "solver", "eta", "grad", "recompute", "adjoint_K"}


def table(rows: list[dict]) -> str:
    lines = ["| backbone | solver | K | grad | cosine | norm | step s | x plain | peak MiB | diverged |"]
    lines.append("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if r["arch"] == "plain":
            lines.append(f"| {r['backbone']} | plain | - | - | - | - | {r['step_s']} | 1 | {r['peak_mib']} | - |")
            continue
        grad = r["grad"] + (" + recompute" if r.get("recompute") else "")
        grad += f" (adjoint_K {r['adjoint_K']})" if "adjoint_K" in r else ""
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
    parser.add_argument("--rounds", type=int, default=3, help="interleaved timing rounds (medians)")
    parser.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    parser.add_argument("--recompute", action=argparse.BooleanOptionalAction, default=True, help="its rows too")
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
                "timing_rounds": args.rounds,
                "timing": "all modes of a backbone in one process, each step right after a plain step; median ratios",
                "settings": args.settings,
                "gradient": "every encoder parameter, flattened; against grad unrolled of the same setting",
                "niceness": os.nice(0),
            },
            "load_average_1m_before": load_before,
            "load_average_1m_after": load_average(),
            "rows": rows,
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
