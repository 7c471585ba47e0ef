"""TextDefender's training recipe (Li et al. 2021, the benchmark whose settings the adversarial baselines take):
what its trainers share besides each method's adversary (its trainer/base.py, args.py and main.py)."""

from __future__ import annotations


def textdefender_training(task: str) -> dict:
    """AdamW at lr 2e-5, weight decay 1e-6 (not on biases and LayerNorm weights), gradients clipped at 1.0, batch
    32, 10 epochs, no warm-up and a cosine decay to 0 stepped every batch over all epochs (its CosineAnnealingLR),
    128 tokens (256 on IMDB), the best epoch on dev.

    Deviation (negligible): the cosine spans the optimizer steps the loop takes, ceil(n / 32) per epoch;
    TextDefender's spans floor(n / 32), so its last partial epoch's batches run at a rate just past 0."""
    return {
        "lr": 2e-5,
        "weight_decay": 1e-6,
        "max_grad_norm": 1.0,
        "batch_size": 32,
        "epochs": 10,
        "warmup_ratio": 0.0,
        "lr_schedule": "cosine",
        "max_length": 256 if task == "imdb" else 128,
    }
