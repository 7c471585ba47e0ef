"""IM-BERT ablation on MiniLM / SST-2: BERT vs EX-BERT vs IM-BERT variants x seeds.

Each (variant, seed) trains with the project's loop (`robustft.training.loop.train`), selects the best epoch on
SST-2 dev, then scores that model on AdvGLUE SST-2 (148 examples). One JSON line per run goes to
--results; finished runs are skipped, so the script can be stopped and restarted. `--table` prints the
mean and std per variant as a markdown table.

    python scripts/im_ablation.py --variants bert,ex-layer,im-inc-k2 --seeds 0,1,2
    python scripts/im_ablation.py --table
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import shutil
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "im_ablation" / "results.jsonl"

# name -> (arch, IM settings). Layer numbers are 1-based.
VARIANTS: dict[str, tuple[str, dict]] = {
    "bert": ("plain", {}),
    "ex-layer": ("ex", {"form": "layer", "dt": 1.0, "layers": "4-6"}),
    "im-inc-k2": ("im", {"form": "increment", "K": 2, "eta": 0.01, "layers": "4-6", "grad": "explicit"}),
    "im-inc-k2-eta03": ("im", {"form": "increment", "K": 2, "eta": 0.03, "layers": "4-6", "grad": "explicit"}),
    "im-inc-k2-all": ("im", {"form": "increment", "K": 2, "eta": 0.01, "layers": "1-6", "grad": "explicit"}),
    "im-inc-k2-jfb": ("im", {"form": "increment", "K": 2, "eta": 0.01, "layers": "4-6", "grad": "jfb"}),
    "im-inc-k2-unrolled": ("im", {"form": "increment", "K": 2, "eta": 0.01, "layers": "4-6", "grad": "unrolled"}),
    "im-layer-k2": ("im", {"form": "layer", "dt": 1.0, "K": 2, "eta": 0.03, "layers": "4-6", "grad": "explicit"}),
}


class DivergenceCounter(logging.Handler):
    """The latest diverged-solve count per IM layer, from the solver's debug records."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.latest: dict[int, tuple[int, int]] = {}

    def emit(self, record):
        if record.msg.startswith("IM layer") and len(record.args) == 4:
            layer, diverged, _, examples = record.args
            self.latest[layer] = (diverged, examples)


def run_one(name: str, seed: int, args) -> dict:
    import torch

    from robustft.config import TrainConfig
    from robustft.data.tasks import load_examples
    from robustft.models.factory import load_classifier
    from robustft.models.im import im_stats
    from robustft.models.predict import accuracy
    from robustft.training.loop import train

    torch.set_num_threads(args.threads)
    arch, im = VARIANTS[name]
    run_dir = Path(args.runs) / f"{args.setting}-{name}-s{seed}"
    cfg = TrainConfig(
        model="minilm",
        task="sst2",
        train_split=args.train_split,
        n_train=args.n_train,
        epochs=args.epochs,
        batch_size=32,
        lr=args.lr,
        max_length=128,
        precision="bf16",
        seed=seed,
        arch=arch,
        im=dict(im),
        output_dir=str(run_dir),
        checkpoint_every=0,
    )
    started = time.time()
    counter = DivergenceCounter()
    im_log = logging.getLogger("robustft.im")
    im_log.addHandler(counter)
    im_log.setLevel(logging.DEBUG)
    try:
        train(cfg, overwrite=True, progress=False)
    finally:
        im_log.removeHandler(counter)
    metrics = json.loads((run_dir / "metrics.json").read_text())
    model, tok = load_classifier(str(run_dir / "best"))
    adv = accuracy(model, tok, load_examples("advglue-sst2", "dev"), max_length=128, precision="bf16")
    shutil.rmtree(run_dir / "checkpoint", ignore_errors=True)  # keep best/ (for the probe), drop optimizer state
    return {
        "setting": args.setting,
        "variant": name,
        "seed": seed,
        "arch": arch,
        "im": im,
        "n_train": metrics["n_train"],
        "epochs": args.epochs,
        "lr": args.lr,
        "dev_accuracy": metrics["best"]["dev_accuracy"],
        "best_epoch": metrics["best"]["epoch"],
        "advglue_sst2_accuracy": adv["accuracy"],
        "advglue_n": adv["n"],
        "advglue_diverged": sum(s["diverged"] for s in im_stats(model).values()),
        # solves that fell back during training and the per-epoch dev evaluations (all IM layers)
        "train_diverged": sum(d for d, _ in counter.latest.values()),
        "train_time_s": metrics["train_time_s"],
        "wall_s": round(time.time() - started, 1),
        "model_dir": str(run_dir / "best"),
    }


def diverged_in_training(run_dir: Path) -> int | None:
    """Diverged solves during training, from the IM warnings in train.log (per layer, the latest count)."""
    log = run_dir / "train.log"
    if not log.exists():
        return None
    latest: dict[str, int] = {}
    for match in re.finditer(r"IM layer (\d+): (\d+) diverged solves", log.read_text()):
        latest[match.group(1)] = int(match.group(2))
    return sum(latest.values())


def diverged_text(row: dict) -> str:
    if "train_diverged" in row:
        return str(row["train_diverged"])
    # older rows: the warnings in train.log give a lower bound (they are logged at 1, 10, 100... and full batches)
    logged = diverged_in_training(Path(row["model_dir"]).parent)
    return "0" if logged == 0 else f">={logged}"  # the first divergence is always logged


def load_rows(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def table(rows: list[dict]) -> str:
    def fmt(values):
        values = [100 * v for v in values]
        std = statistics.stdev(values) if len(values) > 1 else 0.0
        return f"{statistics.mean(values):.1f} ± {std:.1f}"

    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        groups.setdefault((row["setting"], row["variant"]), []).append(row)
    lines = [
        "| setting | variant | arch | IM settings | seeds | SST-2 dev acc | AdvGLUE SST-2 acc | train s/run "
        "| diverged solves (train) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for (setting, variant), group in groups.items():
        im = group[0]["im"]
        settings = ", ".join(f"{k}={v}" for k, v in im.items()) or "-"
        lines.append(
            f"| {setting} | {variant} | {group[0]['arch']} | {settings} | {len(group)} "
            f"| {fmt([r['dev_accuracy'] for r in group])} | {fmt([r['advglue_sst2_accuracy'] for r in group])} "
            f"| {statistics.mean(r['train_time_s'] for r in group):.0f} "
            f"| {'/'.join(diverged_text(r) for r in group)} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variants", default="bert,ex-layer,im-inc-k2,im-layer-k2")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--setting", default="1k", help="label of the data setting in the table")
    parser.add_argument("--train_split", default="train")
    parser.add_argument("--n_train", type=int, default=1000)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--runs", default=str(ROOT / "runs" / "im_ablation"))
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--table", action="store_true", help="print the table of --results and exit")
    args = parser.parse_args()
    if args.table:
        print(table(load_rows(args.results)))
        return 0
    done = {(r["setting"], r["variant"], r["seed"]) for r in load_rows(args.results)}
    args.results.parent.mkdir(parents=True, exist_ok=True)
    for seed in (int(s) for s in args.seeds.split(",")):
        for name in args.variants.split(","):
            if name not in VARIANTS:
                parser.error(f"unknown variant {name}; known: {', '.join(VARIANTS)}")
            if (args.setting, name, seed) in done:
                continue
            row = run_one(name, seed, args)
            with args.results.open("a") as f:
                f.write(json.dumps(row) + "\n")
            print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
