"""Training throughput of the real loop against its floor: the same model, batches, lengths and precision
run as a bare forward, and as forward + backward + AdamW step, in the same process, interleaved, repeated.

    nice -n 10 python benchmarks/train_throughput.py --n 320 --repeats 2
    python benchmarks/train_throughput.py --variants fused compile     # floors with fused AdamW / torch.compile

For each repeat and each (precision, padding): `robustft.training.loop.train` trains one epoch (examples/s
counts only optimizer work: dev evaluation and checkpoints excluded), then the floors replay that epoch's
batches (same `encode`, `epoch_batches`, `collate`, seed and autocast) on a freshly loaded model:
- forward: no_grad, eval mode (the inference floor of the same batches);
- step: train mode, cross-entropy, backward, AdamW step (the loop's work with nothing around it).
`loop_x_step_floor` = loop seconds / step-floor seconds. Variants time the step floor with fused AdamW
(`torch.optim.AdamW(fused=True)`) or a `torch.compile`d model (dynamic shapes; its first, compiling epoch
is reported apart from the timed one). The load average is saved before and after.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time

import torch

from common import load_average, save, sync
from robustft import runtime
from robustft.config import TrainConfig
from robustft.data.batching import collate, encode, epoch_batches, model_inputs
from robustft.data.tasks import get_task, load_examples
from robustft.models.factory import load_classifier
from robustft.training.loop import train


def epoch_inputs(cfg: TrainConfig, tokenizer) -> list[dict]:
    """The loop's first epoch, batch by batch, already collated (what the loop feeds the model)."""
    examples = load_examples(cfg.task, cfg.train_split, n=cfg.n_train, seed=cfg.data_seed)
    items = encode(tokenizer, examples, cfg.max_length)
    order = epoch_batches(items, cfg.batch_size, cfg.seed, 0, cfg.group_by_length)
    pad_to = cfg.max_length if cfg.pad_to_max_length else None
    return [collate([items[i] for i in idx], tokenizer.pad_token_id, pad_to) for idx in order]


def floor_seconds(cfg: TrainConfig, kind: str, variant: str = "plain") -> tuple[float, float | None]:
    """(seconds of one epoch of the floor, seconds of the compiling first epoch or None)."""
    torch.manual_seed(cfg.seed)
    model, tok = load_classifier(cfg.model, get_task(cfg.task).label_names)
    device = runtime.pick_device(cfg.device)
    model.to(device)
    batches = [runtime.to_device(b, device) for b in epoch_inputs(cfg, tok)]
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, fused=variant == "fused" or None)
    net = torch.compile(model, dynamic=True) if variant == "compile" else model

    def epoch() -> float:
        sync(device)
        start = time.perf_counter()
        for b in batches:
            inputs = model_inputs(b)
            if kind == "forward":
                model.eval()
                with torch.no_grad(), runtime.autocast(device, cfg.precision):
                    net(**inputs)
                continue
            model.train()
            with runtime.autocast(device, cfg.precision):
                logits = net(**inputs).logits
            loss = torch.nn.functional.cross_entropy(logits.float(), b["labels"])
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        sync(device)
        return time.perf_counter() - start

    compiling = epoch() if variant == "compile" else None
    return epoch(), compiling


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=320, help="training examples (one epoch)")
    parser.add_argument("--max_length", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--precisions", nargs="+", default=["fp32", "bf16"])
    parser.add_argument("--paddings", nargs="+", default=["dynamic", "max_length"])
    parser.add_argument(
        "--variants",
        nargs="*",
        default=[],
        choices=["fused", "compile"],
        help="extra step floors: fused AdamW, torch.compile(dynamic=True)",
    )
    parser.add_argument("--skip_loop", action="store_true", help="floors only (for the variants)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--name", default="train_throughput")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    load_before = load_average()
    rows = []
    for repeat in range(args.repeats):
        for precision in args.precisions:
            for padding in args.paddings:
                with tempfile.TemporaryDirectory() as out:
                    cfg = TrainConfig(
                        n_train=args.n,
                        n_dev=32,
                        epochs=1,
                        precision=precision,
                        pad_to_max_length=padding == "max_length",
                        max_length=args.max_length,
                        checkpoint_every=0,
                        output_dir=out,
                        threads=args.threads,
                        progress=False,
                    )
                    row = {"repeat": repeat, "precision": precision, "padding": padding, "examples": args.n}
                    if not args.skip_loop:
                        run = train(cfg, progress=False)
                        metrics = json.loads((run / "metrics.json").read_text())
                        row.update(
                            {"loop_s": metrics["train_time_s"], "loop_examples_per_s": metrics["train_examples_per_s"]}
                        )
                    row["forward_floor_s"] = round(floor_seconds(cfg, "forward")[0], 3)
                    row["step_floor_s"] = round(floor_seconds(cfg, "step")[0], 3)
                    for variant in args.variants:
                        seconds, compiling = floor_seconds(cfg, "step", variant)
                        row[f"step_floor_{variant}_s"] = round(seconds, 3)
                        row[f"{variant}_x_step_floor"] = round(seconds / row["step_floor_s"], 3)
                        if compiling is not None:
                            row["compile_first_epoch_s"] = round(compiling, 3)
                    if "loop_s" in row:
                        row["loop_x_step_floor"] = round(row["loop_s"] / row["step_floor_s"], 3)
                        row["loop_x_forward_floor"] = round(row["loop_s"] / row["forward_floor_s"], 3)
                rows.append(row)
                print(row, flush=True)
    save(
        args.name,
        {
            "command": "python benchmarks/train_throughput.py " + " ".join(sys.argv[1:]),
            "model": "minilm",
            "task": "sst2",
            "n_train": args.n,
            "max_length": args.max_length,
            "batch_size": TrainConfig().batch_size,
            "load_average_before": load_before,
            "load_average_after": load_average(),
            "rows": rows,
        },
    )


if __name__ == "__main__":
    main()
