"""A2T (Yoo and Qi, Findings of EMNLP 2021): adversarial training on discrete adversarial examples from a cheap
word-substitution attack, generated inside the loop against the current model (`robustft.adversary.a2t`, which says
why the attack lives in the adversary layer and how it departs from TextAttack's `a2t_yoo_2021` recipe).

After `clean_epochs` epochs of clean training, each batch of B examples gets adversarial examples; `mix` says how:
- "textattack" (default; TextAttack's Trainer, which A2T used): rows of the batch are attacked in a random order until
  ceil(share * B) attacks have succeeded (or every row was tried; already-wrong rows count as no success), and the loss
  is the mean over the B clean and the k collected adversarial rows, an adversarial row weighted alpha:
  (sum CE(clean) + alpha * sum CE(adv)) / (B + k). TextAttack: `num_train_adv_examples` = share (a float) collects
  ceil(share * N) successful examples of the training set (`num_successful_examples`), concatenates them with it,
  and each batch's loss is the mean of its rows' CE, adversarial ones times alpha (`training_step`).
- "batch-means" (ours before): a random ceil(share * B) rows attacked, loss CE(clean mean) + alpha * CE(mean of the
  successful ones), so an adversarial row weighs B / k times a clean one.
TextAttack's Trainer defaults: alpha 1.0, 1 clean epoch. Deviation (both mixes): TextAttack attacks the training set
once per epoch before the epoch, here every batch during it (the examples then follow the model as it trains).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from robustft.adversary.a2t import A2TAttack, A2TSettings
from robustft.adversary.candidates import DEFAULT_SLOTS, CandidateBuilder
from robustft.data.batching import model_inputs
from robustft.errors import ConfigError
from robustft.models.im import adversary_gradients
from robustft.training.objectives.base import AT_LEAST_0, SHARE, Objective, register_objective
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
MIXES = ("textattack", "batch-means")  # see the module's docstring


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
        mix: str = "textattack",
    ):
        check_adversary_grad(im_adversary_grad)
        if mix not in MIXES:
            raise ConfigError(f"method_args.mix: expected one of {', '.join(MIXES)}, got {mix!r}")
        self.mix = mix
        self.im_adversary_grad = im_adversary_grad  # the word-importance gradient on an IM model (docs/im_bert.md)
        self.share, self.alpha, self.clean_epochs = share, alpha, clean_epochs
        self.settings = A2TSettings(max_rate, min_words, similarity)
        self.slots = slots
        self.attack: A2TAttack | None = None
        self.neighbors: dict[str, list[str]] | None = None  # None: the counter-fitted file; tests may inject
        self.epoch = 0

    @classmethod
    def preset(cls, task):
        # TextDefender's training recipe; A2T's attack share and TextAttack Trainer's alpha, clean epoch and mix (named,
        # so config.json says which mix ran: runs before `mix` existed mixed "batch-means")
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
        order = torch.randperm(len(labels)).tolist()
        wanted = math.ceil(self.share * len(labels))
        if self.mix == "batch-means":
            adv, adv_labels, attacked = self._collect(model, batch, order[:wanted], None)
        else:
            adv, adv_labels, attacked = self._collect(model, batch, order, wanted)
        logs["adv_success"] = len(adv_labels) / attacked
        logs["adv_rows"] = len(adv_labels)
        if not len(adv_labels):
            return clean, logs
        adv_ce = F.cross_entropy(model(**adv).logits.float(), adv_labels, reduction="none")
        logs["adv_ce"] = adv_ce.mean().item()
        if self.mix == "batch-means":
            return clean + self.alpha * adv_ce.mean(), logs
        # TextAttack's training_step: the mean over every row, an adversarial row's CE times alpha
        return (clean * len(labels) + self.alpha * adv_ce.sum()) / (len(labels) + len(adv_labels)), logs

    def _collect(self, model, batch, order: list[int], wanted: int | None) -> tuple[dict, torch.Tensor, int]:
        """The model inputs and labels of the successful adversarial rows, and how many rows were attacked.
        wanted None: attack the rows of `order` at once; else attack them in that order, as few at a time as are
        still wanted, until `wanted` attacks have succeeded or `order` is spent (the first successes kept)."""
        parts, attacked, found = [], 0, 0
        while attacked < len(order) and (wanted is None or found < wanted):
            size = len(order) - attacked if wanted is None else wanted - found
            part = rows_of(batch, order[attacked : attacked + size])
            attacked += len(part["examples"])
            with adversary_gradients(model, self.im_adversary_grad):
                outcome = self.attack(model, part)
            won = outcome.success.nonzero().flatten().tolist()
            if wanted is not None:
                won = won[: wanted - found]  # one round asks for no more than it still needs
            found += len(won)
            if won:
                inputs = {k: v[won] for k, v in model_inputs(part).items()}
                inputs["input_ids"] = outcome.input_ids[won]
                parts.append((inputs, part["labels"][won]))
        if not parts:
            return {}, batch["labels"][:0], attacked
        inputs = {k: torch.cat([p[k] for p, _ in parts]) for k in parts[0][0]}
        return inputs, torch.cat([y for _, y in parts]), attacked


def rows_of(batch: dict, rows: list[int]) -> dict:
    """The batch restricted to `rows` (tensors indexed, examples picked)."""
    index = torch.tensor(rows, device=batch["input_ids"].device)
    out = {k: v.index_select(0, index.to(v.device)) for k, v in batch.items() if isinstance(v, torch.Tensor)}
    out["examples"] = [batch["examples"][r] for r in rows]
    return out
