"""A2T (Yoo and Qi, Findings of EMNLP 2021): adversarial training on discrete adversarial examples from a cheap
word-substitution attack, generated inside the loop against the current model (`robustft.adversary.a2t`, which says
why the attack lives in the adversary layer and how it departs from TextAttack's `a2t_yoo_2021` recipe).

Loss: CE(clean batch) + alpha * CE(the successful adversarial examples of a random `share` of the batch), after
`clean_epochs` epochs of clean training. TextAttack's Trainer (which A2T used) defaults: alpha 1.0, 1 clean epoch;
deviation: it attacks a share of the training set once per epoch before the epoch, here a share of every batch
during it (the examples then follow the model as it trains).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from robustft.adversary.a2t import A2TAttack, A2TSettings
from robustft.adversary.candidates import DEFAULT_SLOTS, CandidateBuilder
from robustft.data.batching import model_inputs
from robustft.models.im import adversary_gradients
from robustft.training.objectives.base import AT_LEAST_0, SHARE, Objective, register_objective
from robustft.training.objectives.embedding import check_adversary_grad
from robustft.training.objectives.textdefender import textdefender_training

DEVIATIONS = [
    "A2T: candidates from the counter-fitted 8-neighbour file (A2T: 20 counter-fitted embedding neighbours, "
    "cosine >= 0.8), all-MiniLM-L6-v2 sentence similarity (A2T: stsb-distilbert-base), no part-of-speech check",
    "A2T: adversarial examples for a share of every batch against the current model (TextAttack's Trainer: a share "
    "of the training set before each epoch)",
]


@register_objective("a2t")
class A2T(Objective):
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
    ):
        check_adversary_grad(im_adversary_grad)
        self.im_adversary_grad = im_adversary_grad  # the word-importance gradient on an IM model (docs/im_bert.md)
        self.share, self.alpha, self.clean_epochs = share, alpha, clean_epochs
        self.settings = A2TSettings(max_rate, min_words, similarity)
        self.slots = slots
        self.attack: A2TAttack | None = None
        self.neighbors: dict[str, list[str]] | None = None  # None: the counter-fitted file; tests may inject
        self.epoch = 0

    @classmethod
    def preset(cls, task):
        # TextDefender's training recipe; A2T's attack share and TextAttack Trainer's alpha and clean epoch
        return {**textdefender_training(task), "method_args": {"share": 0.2, "alpha": 1.0, "clean_epochs": 1}}

    @classmethod
    def deviations(cls, cfg) -> list[str]:
        return list(DEVIATIONS)

    def setup(self, model, ctx) -> None:
        encoder = None
        if self.settings.similarity > 0:
            from robustft.models.sentence import SentenceEncoder

            encoder = SentenceEncoder("minilm", ctx.device)
        self.attack = A2TAttack(
            CandidateBuilder(ctx.tokenizer, ctx.task, self.neighbors, slots=self.slots), self.settings, encoder
        )

    def on_epoch_start(self, epoch: int) -> None:
        self.epoch = epoch

    def loss(self, model, batch):
        labels = batch["labels"]
        clean = F.cross_entropy(model(**model_inputs(batch)).logits.float(), labels)
        logs = {"ce": clean.item()}
        if self.epoch < self.clean_epochs or self.share <= 0:
            return clean, logs
        rows = torch.randperm(len(labels))[: math.ceil(self.share * len(labels))].tolist()
        part = rows_of(batch, rows)
        with adversary_gradients(model, self.im_adversary_grad):
            outcome = self.attack(model, part)
        won = outcome.success.nonzero().flatten().tolist()
        logs["adv_success"] = len(won) / len(rows)
        if not won:
            return clean, logs
        inputs = {k: v[won] for k, v in model_inputs(part).items()}
        inputs["input_ids"] = outcome.input_ids[won]
        adv = F.cross_entropy(model(**inputs).logits.float(), part["labels"][won])
        logs["adv_ce"] = adv.item()
        return clean + self.alpha * adv, logs


def rows_of(batch: dict, rows: list[int]) -> dict:
    """The batch restricted to `rows` (tensors indexed, examples picked)."""
    index = torch.tensor(rows, device=batch["input_ids"].device)
    out = {k: v.index_select(0, index.to(v.device)) for k, v in batch.items() if isinstance(v, torch.Tensor)}
    out["examples"] = [batch["examples"][r] for r in rows]
    return out
