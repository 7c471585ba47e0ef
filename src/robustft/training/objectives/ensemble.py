"""The base of the objectives whose model predicts by an ensemble of noisy copies (SAFER, RanMASK, DNE): set-up of
the word structure and perturbation sets, and the ensemble written into the model's config, so that the saved model
(best/config.json in the run folder) says how it predicts and `robustft eval` / `robustft attack` wrap it in that
ensemble (`robustft.adversary.ensemble.as_ensemble`). Dev selection during training scores the bare classifier on
clean inputs (one forward per example; TextDefender selects the same way)."""

from __future__ import annotations

import torch.nn.functional as F

from robustft.adversary import smoothing
from robustft.adversary.ensemble import CONFIG_KEY, EnsembleSettings
from robustft.data.batching import model_inputs
from robustft.errors import ConfigError
from robustft.training.objectives.base import AT_LEAST_1, Bounds, Objective

SHARE_BELOW_1 = Bounds(0, 1)


class EnsembleObjective(Objective):
    """Holds the ensemble's settings; subclasses say which table they need and how a batch is perturbed."""

    arg_bounds = {"copies": AT_LEAST_1, "chunk": AT_LEAST_1}
    table_width = 9  # the token and its 8 counter-fitted neighbours
    second_order = False

    def __init__(self, settings: EnsembleSettings):
        self.settings = settings
        self.tokenizer = self.task = self.table = None
        self.neighbors: dict[str, list[str]] | None = None  # None: the counter-fitted file; tests may inject

    def setup(self, model, ctx) -> None:
        self.tokenizer, self.task = ctx.tokenizer, ctx.task
        self.table = smoothing.neighbour_table(ctx.tokenizer, self.table_width, self.second_order, self.neighbors)
        setattr(model.config, CONFIG_KEY, self.settings.to_config())

    def words(self, batch: dict) -> smoothing.Words:
        if self.table is None:
            raise ConfigError(f"method '{self.name}' needs setup() (tokenizer, task) before the first batch")
        ids, mask = batch["input_ids"], batch["attention_mask"]
        return smoothing.batch_words(ids, mask, self.table.continuation, self.tokenizer, self.task)


def noisy_cross_entropy(model, batch: dict, noisy_ids) -> tuple:
    """Cross-entropy of the model on the batch with its token ids replaced by `noisy_ids`."""
    inputs = {**model_inputs(batch), "input_ids": noisy_ids}
    loss = F.cross_entropy(model(**inputs).logits.float(), batch["labels"])
    return loss, {"ce": loss.item()}
