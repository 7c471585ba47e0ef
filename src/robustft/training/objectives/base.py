"""The objective interface: given the model and a batch, return the loss and what to log.

The training loop owns everything else (devices, precision, accumulation, checkpoints). An objective
may own extra trainable modules (RIFT's projection heads) or frozen ones (a teacher): it returns the
trainable ones from `modules()` so the loop optimises and checkpoints them with the model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch
from torch import nn

from robustft.errors import ConfigError

OBJECTIVES: dict[str, type[Objective]] = {}


def register_objective(name: str):
    def wrap(cls):
        cls.name = name
        OBJECTIVES[name] = cls
        return cls

    return wrap


def build_objective(name: str, params: dict[str, Any] | None = None) -> Objective:
    # Objectives register on import; importing the package module pulls every built-in one in.
    import robustft.training.objectives  # noqa: F401

    if name not in OBJECTIVES:
        raise ConfigError(f"unknown method '{name}'; known: {', '.join(sorted(OBJECTIVES))}")
    try:
        return OBJECTIVES[name](**(params or {}))
    except TypeError as exc:
        raise ConfigError(f"bad parameters for method '{name}': {exc}") from None


@dataclass
class TrainContext:
    """What an objective may need at set-up: the tokenizer, task and where the run lives."""

    tokenizer: Any
    task: Any
    model_name: str
    run_dir: Any = None
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))


class Objective:
    name: ClassVar[str] = "base"
    # RIFT needs B/C examples of each class per batch; the loop's sampler honours this flag.
    class_balanced_batches: ClassVar[bool] = False
    # Weight decay for an extra module by its modules() name; others use the config's (see weight_decay()).
    module_weight_decay: ClassVar[dict[str, float]] = {}

    @classmethod
    def preset(cls, task: str) -> dict[str, Any]:
        """The method's published recipe for training on `task`, as TrainConfig keys (e.g. {"lr": 2e-5,
        "epochs": 20, "method_args": {...}}). The config builder applies each key the user did not set
        and records the applied preset. Empty: no published recipe, the loop's defaults."""
        return {}

    @classmethod
    def deviations(cls, cfg) -> list[str]:
        """How a run of this config departs from the method's paper or release; the loop records them in the
        run's config.json and the report lists them beside its numbers."""
        return []

    def setup(self, model: nn.Module, ctx: TrainContext) -> None:
        """Called once before training (build teachers, heads, candidate tables)."""

    def modules(self) -> dict[str, nn.Module]:
        """Extra trainable modules, optimised and checkpointed alongside the model."""
        return {}

    def on_epoch_start(self, epoch: int) -> None:
        """Called at the start of every epoch (0-based), also when a run resumes mid-epoch."""

    def lr_factor(self, epoch: int) -> float:
        """Multiplies the learning-rate schedule during `epoch` (0-based); see `robustft.training.optim`."""
        return 1.0

    def weight_decay(self, module_name: str, param_name: str, param: torch.Tensor, default: float) -> float:
        """The AdamW weight decay of one parameter. `module_name` is the loop's key ("model", or
        "objective.NAME" for a module from `modules()`); `default` is the config's weight_decay.
        Default rule: none on biases and LayerNorms, `module_weight_decay[NAME]` for an objective's module."""
        if param.ndim < 2 or "LayerNorm" in param_name:
            return 0.0
        return self.module_weight_decay.get(module_name.removeprefix("objective."), default)

    def loss(self, model: nn.Module, batch: dict[str, Any]) -> tuple[torch.Tensor, dict[str, float]]:
        raise NotImplementedError
