"""The objective interface: given the model and a batch, return the loss and what to log.

The training loop owns everything else (devices, precision, accumulation, checkpoints). An objective
may own extra trainable modules (RIFT's projection heads) or frozen ones (a teacher): it returns the
trainable ones from `modules()` so the loop optimises and checkpoints them with the model.
"""

from __future__ import annotations

import inspect
import types
import typing
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch
from torch import nn


@dataclass(frozen=True)
class Bounds:
    """The range of a numeric method argument: low (excluded where `above`) to high, both optional."""

    low: float | None = None
    high: float | None = None
    above: bool = False

    def holds(self, value) -> bool:
        low_ok = self.low is None or (value > self.low if self.above else value >= self.low)
        return low_ok and (self.high is None or value <= self.high)

    def __str__(self) -> str:
        low = "" if self.low is None else f"{'>' if self.above else '>='} {self.low:g}"
        high = "" if self.high is None else f"<= {self.high:g}"
        return " and ".join(p for p in (low, high) if p)


AT_LEAST_0, ABOVE_0, AT_LEAST_1, SHARE = Bounds(0), Bounds(0, above=True), Bounds(1), Bounds(0, 1)

# The range of every numeric argument of the built-in objectives, by name (a name means the same kind of thing in
# every objective that has it). A negative beta (RIFT's KL weight, TRADES', ASCC's) rewards the adversary's
# disagreement instead of penalising it, and 0 steps or slots is no adversary at all: each trains another model
# than its name says. An objective may narrow or add ranges in its own `arg_bounds`.
ARG_BOUNDS: dict[str, Bounds] = {
    **dict.fromkeys(("beta", "alpha", "adv_ce", "l2_pretrained", "clean_weight", "entropy_weight"), AT_LEAST_0),
    **dict.fromkeys(("step_size", "init_mag", "max_norm", "weight_decay", "hull_weight_decay"), AT_LEAST_0),
    **dict.fromkeys(("steps", "slots", "hull_chunk", "critic_hidden"), AT_LEAST_1),
    **dict.fromkeys(("lr", "hull_lr", "tau", "entropy_norm"), ABOVE_0),
    **dict.fromkeys(("label_smoothing", "cl", "ch"), SHARE),
    "seed": Bounds(0, 2**32 - 1),  # an ensemble's noise seed: numpy's and torch's range
}


def declared_args(cls: type) -> dict[str, Any]:
    """An objective's arguments (its __init__'s keywords) and their declared types."""
    hints = typing.get_type_hints(cls.__init__)
    names = [p for p in inspect.signature(cls.__init__).parameters if p != "self"]
    return {name: hints.get(name, Any) for name in names}


def fits(value, hint) -> bool:
    """Whether `value` (from YAML or the command line) is of the declared type; an int is a float, a bool is not."""
    if hint is Any:
        return True
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return any(fits(value, h) for h in typing.get_args(hint))
    origin = typing.get_origin(hint) or hint
    if hint is type(None):
        return value is None
    if origin is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if origin is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if origin in (tuple, list):
        return isinstance(value, list | tuple)
    return isinstance(value, origin) if isinstance(origin, type) else True


def type_name(hint) -> str:
    names = {int: "a whole number", float: "a number", str: "a string", bool: "true or false", type(None): "null"}
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return " or ".join(dict.fromkeys(type_name(h) for h in typing.get_args(hint)))
    origin = typing.get_origin(hint) or hint
    return "a list" if origin in (tuple, list) else names.get(origin, getattr(origin, "__name__", str(origin)))


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
    # Ranges of this objective's numeric arguments beyond (or narrower than) the shared ARG_BOUNDS.
    arg_bounds: ClassVar[dict[str, Bounds]] = {}
    # Declared costs the bench prices by (bench/costs.py): ascent steps a step takes by default, noisy copies each
    # prediction votes over.
    default_steps: ClassVar[int | None] = None
    copies: ClassVar[int] = 1

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
