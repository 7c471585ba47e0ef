"""What one training checkpoint costs for MiniLM + AdamW: seconds to save and load, bytes written, disk held.

    python benchmarks/checkpoint_cost.py [--saves 4] [--name checkpoint_cost]

Works with any version of robustft.training.checkpoint that has save_checkpoint(folder, modules, optimizer,
scheduler, state) and load_checkpoint(folder, modules, optimizer, scheduler), so the same script measures
the code before and after a change (point PYTHONPATH at the other src/).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import torch

from common import save
from robustft.models.factory import load_classifier
from robustft.training.checkpoint import load_checkpoint, save_checkpoint


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--saves", type=int, default=4)
    parser.add_argument("--name", default="checkpoint_cost")
    args = parser.parse_args()
    torch.manual_seed(0)
    model, _ = load_classifier("minilm", ("negative", "positive"))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)
    model(input_ids=torch.ones(2, 8, dtype=torch.long)).logits.sum().backward()
    optimizer.step()  # fills the AdamW moments, as in a real run
    modules = {"model": model}
    with tempfile.TemporaryDirectory(dir=".") as tmp:
        folder = Path(tmp) / "checkpoint"
        save_s = []
        for step in range(args.saves):
            started = time.perf_counter()
            save_checkpoint(folder, modules, optimizer, scheduler, {"step": step})
            save_s.append(time.perf_counter() - started)
        held = folder_bytes(Path(tmp))
        started = time.perf_counter()
        load_checkpoint(folder, modules, optimizer, scheduler)
        load_s = time.perf_counter() - started
    result = {
        "parameters": sum(p.numel() for p in model.parameters()),
        "saves": args.saves,
        "save_s": [round(s, 3) for s in save_s],
        "save_s_median": round(sorted(save_s)[len(save_s) // 2], 3),
        "load_s": round(load_s, 3),
        "bytes_held_after_saves": held,
    }
    print(result)
    save(args.name, result)


if __name__ == "__main__":
    main()
