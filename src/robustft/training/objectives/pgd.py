"""PGD adversarial training on input embeddings (Madry et al. 2018, as TextDefender runs it for text):
K normalised ascent steps on the word embeddings, then cross-entropy on the adversarial point only.
"""

from __future__ import annotations

import torch.nn.functional as F

from robustft.adversary.embedding_delta import DeltaSettings, ascend, ce_gain
from robustft.adversary.embeds import forward_embeds, word_embeddings
from robustft.data.batching import model_inputs
from robustft.training.objectives.embedding import EmbeddingObjective
from robustft.training.objectives.textdefender import textdefender_training


class PGD(EmbeddingObjective):
    """Defaults are TextDefender's: 5 steps of 0.03, init 0.05, L2, no norm bound.

    clean_weight > 0 adds that much clean cross-entropy (0 = Madry's adversarial-only loss).
    """

    name = "pgd"

    default_steps = 5

    def __init__(
        self,
        steps: int = default_steps,
        step_size: float = 0.03,
        init_mag: float = 0.05,
        max_norm: float = 0.0,
        norm: str = "l2",
        scope: str = "all",
        clean_weight: float = 0.0,
        im_adversary_grad: str = "exact",
    ):
        super().__init__(scope, im_adversary_grad)
        self.settings = DeltaSettings(steps, step_size, init_mag, max_norm, norm)
        self.clean_weight = clean_weight

    @classmethod
    def preset(cls, task):
        # TextDefender's PGD settings (this file's defaults) and training recipe; the IM gradient choice is ours
        return {
            **textdefender_training(task),
            "method_args": {
                "steps": 5,
                "step_size": 0.03,
                "init_mag": 0.05,
                "max_norm": 0.0,
                "im_adversary_grad": "exact",
            },
        }

    def loss(self, model, batch):
        labels = batch["labels"]
        embeds = word_embeddings(model, batch)
        delta = ascend(
            model, batch, embeds, self.perturb_mask(batch), ce_gain(labels), self.settings, self.im_adversary_grad
        )
        adv_loss = F.cross_entropy(forward_embeds(model, batch, embeds + delta).float(), labels)
        logs = {"adv_ce": adv_loss.item(), "delta_norm": delta.flatten(1).norm(dim=1).mean().item()}
        if self.clean_weight <= 0:
            return adv_loss, logs
        clean_loss = F.cross_entropy(model(**model_inputs(batch)).logits.float(), labels)
        logs["ce"] = clean_loss.item()
        return adv_loss + self.clean_weight * clean_loss, logs
