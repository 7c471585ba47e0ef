"""Standard fine-tuning: cross-entropy on clean inputs."""

from __future__ import annotations

import torch.nn.functional as F

from robustft.data.batching import model_inputs
from robustft.training.objectives.base import Objective


class Standard(Objective):
    name = "standard"

    def __init__(self, label_smoothing: float = 0.0):
        self.label_smoothing = label_smoothing

    def loss(self, model, batch):
        logits = model(**model_inputs(batch)).logits
        loss = F.cross_entropy(logits.float(), batch["labels"], label_smoothing=self.label_smoothing)
        return loss, {"ce": loss.item()}
