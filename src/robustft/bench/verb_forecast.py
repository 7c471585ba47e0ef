"""The line a long verb prints before it starts (train, attack, eval --certify): its expected minutes, priced as the
bench prices the same job (bench/costs.py's work, bench/pricing's rates), so that a user knows whether to wait."""

from __future__ import annotations

import copy

from robustft.bench import costs, pricing
from robustft.config import TrainConfig
from robustft.data.tasks import get_task
from robustft.errors import RobustftError
from robustft.runs import resolve


def forecast_line(verb: str, cfg) -> str | None:
    """'train: expected about 12 min ...' for a verb that may take minutes, None for the others (an evaluation takes
    seconds) and for a job priced under a minute."""
    if verb not in ("train", "attack") and not (verb == "eval" and cfg.certify):
        return None
    if verb == "attack" and cfg.split is None:  # the attack's own default split (attacks/run.py)
        cfg = copy.copy(cfg)
        cfg.split = "test" if "test" in get_task(cfg.task).splits else "dev"
    seconds = pricing.price(pricing.Plan([pricing.Priced(costs.work_of(verb, cfg, trained_config(verb, cfg)))]))[0]
    minutes = seconds * pricing.slowdown(cfg.threads) / 60
    if minutes < 1:  # not long: nothing to wait for, and no line before a bad value's one-line error
        return None
    return f"{verb}: expected about {minutes:.0f} min (the bench's rates; a busier or slower machine takes longer)"


def trained_config(verb: str, cfg) -> TrainConfig | None:
    """The training config of the model an eval or attack uses, when it is a robustft training run."""
    saved = resolve(cfg.model).train_config if verb != "train" else None
    try:
        return TrainConfig(**saved) if saved else None
    except (TypeError, RobustftError):  # a run of another version: priced as a model not trained here
        return None
