"""The optimizer and learning-rate schedule of a training run: AdamW with per-parameter weight decay and a
LambdaLR whose factor is the config's schedule times the objective's per-epoch factor.

Both rules belong to the objective where a method's recipe says so (RIFT: an LR warm-up of 0.1 and 0.55
in its first two epochs, weight decay 0 on the encoder and 2e-4 on everything else), with the loop's
rules as the default (`Objective.lr_factor`, `Objective.weight_decay`). The factor depends only on the
step number, so a resumed run's schedule continues exactly.
"""

from __future__ import annotations

import torch

from robustft.errors import ConfigError

SCHEDULES = ("linear", "constant")


def build_optimizer(modules: dict, cfg, steps_per_epoch: int, objective):
    """(AdamW, LambdaLR) over the trainable parameters of `modules` ({"model": ..., "objective.NAME": ...}).

    Weight decay: `objective.weight_decay(module_name, param_name, param, cfg.weight_decay)` per parameter.
    Schedule per optimizer step: cfg.lr_schedule ("linear": linear warm-up over cfg.warmup_ratio of the
    steps, then linear decay to 0; "constant": 1) times `objective.lr_factor(step // steps_per_epoch)`.
    """
    if steps_per_epoch < 1:
        raise ConfigError(f"steps_per_epoch must be positive, got {steps_per_epoch}")
    kind = cfg.lr_schedule
    if kind not in SCHEDULES:
        raise ConfigError(f"lr_schedule must be one of {', '.join(SCHEDULES)}, not {kind!r}")
    groups: dict[float, list] = {}
    for module_name, module in modules.items():
        for name, p in module.named_parameters():
            if p.requires_grad:
                rate = float(objective.weight_decay(module_name, name, p, cfg.weight_decay))
                groups.setdefault(rate, []).append(p)
    optimizer = torch.optim.AdamW(
        [{"params": params, "weight_decay": rate} for rate, params in sorted(groups.items())], lr=cfg.lr
    )
    total_steps = steps_per_epoch * cfg.epochs
    warmup = int(cfg.warmup_ratio * total_steps) if kind == "linear" else 0

    def schedule(step: int) -> float:
        if kind == "constant":
            base = 1.0
        elif step < warmup:
            base = (step + 1) / (warmup + 1)
        else:
            base = max(0.0, (total_steps - step) / max(1, total_steps - warmup))
        return base * float(objective.lr_factor(step // steps_per_epoch))

    return optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
