"""A2T (Yoo and Qi, Findings of EMNLP 2021): the loss only. The defense (`robustft.defenses.a2t`) owns the attack,
the rows it attacks and how their loss mixes with the clean one; after `clean_epochs` clean epochs (TextAttack's
Trainer: 1) every batch gets adversarial examples.
"""

from __future__ import annotations

import torch.nn.functional as F

from robustft.adversary.candidates import DEFAULT_SLOTS
from robustft.data.batching import model_inputs
from robustft.defenses.a2t import A2T as A2TDefense
from robustft.defenses.a2t import A2TSettings
from robustft.training.objectives.base import AT_LEAST_0, SHARE, Objective
from robustft.training.objectives.embedding import check_adversary_grad
from robustft.training.objectives.textdefender import textdefender_training

DEVIATIONS = [
    "A2T: candidates from the counter-fitted 8-neighbour file (A2T: 20 counter-fitted embedding neighbours, "
    "cosine >= 0.8), all-MiniLM-L6-v2 sentence similarity (A2T: stsb-distilbert-base), no part-of-speech check",
    "A2T: adversarial examples for a share of every batch against the current model (TextAttack's Trainer: a share "
    "of the training set before each epoch)",
    "A2T: word importance from the gradient in eval mode with the true label (TextAttack: train mode, dropout on, the "
    "predicted label); candidates only of the word's number of sub-word tokens",
]


class A2T(Objective):
    name = "a2t"
    arg_bounds = {
        "share": SHARE,
        "max_rate": SHARE,
        "similarity": SHARE,
        "min_words": AT_LEAST_0,
        "clean_epochs": AT_LEAST_0,
    }

    def __init__(
        self,
        share: float = 0.2,
        alpha: float = 1.0,
        clean_epochs: int = 1,
        max_rate: float = 0.1,
        min_words: int = 4,
        similarity: float = 0.9,
        slots: int = DEFAULT_SLOTS,
        im_adversary_grad: str = "exact",
        mix: str = "textattack",
    ):
        check_adversary_grad(im_adversary_grad)
        self.settings = A2TSettings(max_rate, min_words, similarity, share, alpha, mix, slots, im_adversary_grad)
        self.clean_epochs = clean_epochs
        self.defense: A2TDefense | None = None
        self.neighbors: dict[str, list[str]] | None = None  # None: the counter-fitted file; tests may inject
        self.epoch = 0

    @classmethod
    def preset(cls, task):
        # TextDefender's recipe; A2T's share; TextAttack Trainer's alpha, clean epoch, mix (runs before it: batch-means)
        args = {"share": 0.2, "alpha": 1.0, "clean_epochs": 1, "mix": "textattack"}
        return {**textdefender_training(task), "method_args": args}

    @classmethod
    def deviations(cls, cfg) -> list[str]:
        mix = (cfg.method_args or {}).get("mix", "textattack")
        batch_means = [
            "A2T: mix batch-means: CE(clean mean) + alpha CE(adversarial mean) over a share of each batch "
            "attacked (TextAttack: ceil(share x N) successes collected, every row of a batch weighted alike)"
        ]
        return list(DEVIATIONS) + (batch_means if mix == "batch-means" else [])

    def setup(self, model, ctx) -> None:
        self.defense = A2TDefense(self.settings, ctx.tokenizer, ctx.task, self.neighbors, device=ctx.device)

    def on_epoch_start(self, epoch: int) -> None:
        self.epoch = epoch

    def loss(self, model, batch):
        labels = batch["labels"]
        clean = F.cross_entropy(model(**model_inputs(batch)).logits.float(), labels)
        logs = {"ce": clean.item()}
        if self.epoch < self.clean_epochs or self.settings.share <= 0:
            return clean, logs
        adv, adv_labels, attacked = self.defense.adversarial_rows(model, batch)
        logs["adv_success"] = len(adv_labels) / attacked
        logs["adv_rows"] = len(adv_labels)
        if not len(adv_labels):
            return clean, logs
        adv_ce = F.cross_entropy(model(**adv).logits.float(), adv_labels, reduction="none")
        logs["adv_ce"] = adv_ce.mean().item()
        return self.defense.mixed_loss(clean, adv_ce, len(labels)), logs
