"""TRADES (Zhang et al. 2019) on input embeddings: CE(clean) + beta * KL(p_clean || p_adv), where the
adversary maximises that KL from a small random start with the model in eval mode (as TRADES does).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from robustft.adversary.embedding_delta import DeltaSettings, ascend, kl
from robustft.adversary.embeds import forward_embeds, word_embeddings
from robustft.training.objectives.embedding import EmbeddingObjective
from robustft.training.objectives.textdefender import textdefender_training


class TRADES(EmbeddingObjective):
    """Defaults: beta 6 (TRADES), 5 normalised L2 steps of 0.03 from 0.001 * N(0, 1), no norm bound."""

    name = "trades"

    default_steps = 5

    def __init__(
        self,
        beta: float = 6.0,
        steps: int = default_steps,
        step_size: float = 0.03,
        init_mag: float = 0.001,
        max_norm: float = 0.0,
        norm: str = "l2",
        scope: str = "all",
        im_adversary_grad: str = "exact",
    ):
        super().__init__(scope, im_adversary_grad)
        self.beta = beta
        self.settings = DeltaSettings(steps, step_size, init_mag, max_norm, norm, init="normal")

    @classmethod
    def preset(cls, task):
        # TRADES' beta (Zhang et al. 2019); the text adversary's steps have no published recipe (our defaults).
        # TextDefender has no TRADES: it trains with TextDefender's recipe like the other baselines (our choice).
        return {**textdefender_training(task), "method_args": {"beta": 6.0, "im_adversary_grad": "exact"}}

    @classmethod
    def deviations(cls, cfg) -> list[str]:
        a = {"steps": 5, "step_size": 0.03, "init_mag": 0.001, **cfg.method_args}
        return [
            f"TRADES: a text adversary of our own settings ({a['steps']} steps of {a['step_size']:g} on the word "
            f"embeddings from {a['init_mag']:g} N(0, 1)); no published text recipe, TextDefender has no TRADES"
        ]

    def loss(self, model, batch):
        labels = batch["labels"]
        embeds = word_embeddings(model, batch)
        was_training = model.training
        model.eval()
        try:
            with torch.no_grad():
                p_clean = forward_embeds(model, batch, embeds).detach()
            delta = ascend(
                model,
                batch,
                embeds,
                self.perturb_mask(batch),
                lambda adv: kl(p_clean, adv),
                self.settings,
                self.im_adversary_grad,
            )
        finally:
            model.train(was_training)
        clean_logits = forward_embeds(model, batch, embeds)
        adv_logits = forward_embeds(model, batch, embeds + delta)
        ce = F.cross_entropy(clean_logits.float(), labels)
        robust = kl(clean_logits, adv_logits)
        return ce + self.beta * robust, {"ce": ce.item(), "kl": robust.item()}
