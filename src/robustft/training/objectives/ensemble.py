"""The base of the objectives whose model predicts by an ensemble of noisy copies (SAFER, RanMASK, DNE): the
defense (`robustft.defenses`: its noise, table and ensemble) built at set-up, and the ensemble written into the
model's config, so that the saved model (best/config.json in the run folder) says how it predicts and `robustft
eval` / `robustft attack` wrap it in that ensemble (`robustft.defenses.ensemble.as_ensemble`). Dev selection during
training scores the bare classifier on clean inputs (one forward per example; TextDefender selects the same way)."""

from __future__ import annotations

import torch.nn.functional as F

from robustft.data.batching import model_inputs
from robustft.defenses.base import Defense
from robustft.defenses.registry import defense_for
from robustft.defenses.settings import CONFIG_KEY, EnsembleSettings
from robustft.errors import ConfigError
from robustft.training.objectives.base import AT_LEAST_1, Bounds, Objective

SHARE_BELOW_1 = Bounds(0, 1)


class EnsembleObjective(Objective):
    """Holds the ensemble's settings; the defense they name perturbs the batches, subclasses say the loss."""

    arg_bounds = {"copies": AT_LEAST_1, "chunk": AT_LEAST_1}

    def __init__(self, settings: EnsembleSettings):
        self.settings = settings
        self.tokenizer = self.task = None
        self._defense: Defense | None = None
        self.neighbors: dict[str, list[str]] | None = None  # None: the counter-fitted file; tests may inject

    def setup(self, model, ctx) -> None:
        self.tokenizer, self.task = ctx.tokenizer, ctx.task
        self._defense = defense_for(self.settings, ctx.tokenizer, ctx.task, self.neighbors)
        setattr(model.config, CONFIG_KEY, self.settings.to_config())

    @property
    def defense(self) -> Defense:
        if self._defense is None:
            raise ConfigError(f"method '{self.name}' needs setup() (tokenizer, task) before the first batch")
        return self._defense


def noisy_cross_entropy(model, batch: dict, noisy: dict) -> tuple:
    """Cross-entropy of the model on the batch with its inputs replaced by the noisy copy's (`noisy`)."""
    inputs = {**model_inputs(batch), **noisy}
    loss = F.cross_entropy(model(**inputs).logits.float(), batch["labels"])
    return loss, {"ce": loss.item()}
