"""SAFER (Ye, Gong and Liu, ACL 2020): every one-token word replaced by a uniform draw from its perturbation set,
prediction by an ensemble of such copies, and the certificate of their Theorem 1.

Certified threat model: the attacker may replace every word of the perturbable field that is one token in the
vocabulary, at once and independently, by any member of its first-order set (the word and its counter-fitted
neighbours that are one token, case matched: `smoothing.neighbour_table`), one substitution per word position;
words of several tokens, insertions, deletions and second substitutions of a substitute are outside it. The
certified classifier is the majority vote over noisy copies (`vote: votes`), not the ensemble's logit mean.

Theorem 1: with q_j the overlap of word j's noise with the noise of any allowed substitute (`smoothing.set_overlap`:
|S_j & S_u| / max(|S_j|, |S_u|)), the noise distributions of the text and of any attacked text differ by at most
Delta = 1 - prod_j q_j in total variation, so every class's vote share moves by at most Delta; the true label is
certified when p - Delta > 0.5. SAFER's release (and this code until issue 63) divided by |S_j| alone, which
overstates q_j when the substitute's set is the larger.
"""

from __future__ import annotations

import torch

from robustft.adversary import smoothing
from robustft.defenses.base import Defense, per_row, repeat_words

DEFINITION = (
    "true label certified against replacing every one-token word by a one-token member of its perturbation set "
    "(SAFER, Theorem 1)"
)


class SAFER(Defense):
    name = "safer"
    definition = DEFINITION

    def substitute(self, input_ids: torch.Tensor, words: smoothing.Words, uniform: torch.Tensor) -> torch.Tensor:
        return smoothing.substitute(input_ids, words, self.table_on(input_ids.device), uniform)

    def training_copy(self, batch: dict) -> dict:
        ids = batch["input_ids"]
        words = self.words(ids, batch["attention_mask"])
        return {"input_ids": self.substitute(ids, words, torch.rand(ids.shape, device=ids.device))}

    def copies(self, input_ids, attention_mask, token_type_ids, words, generators) -> dict:
        n = self.settings.copies
        uniform = per_row(generators, attention_mask, lambda g, length: torch.rand(n, length, generator=g))
        rows = {"attention_mask": attention_mask.repeat_interleave(n, 0)}
        if token_type_ids is not None:
            rows["token_type_ids"] = token_type_ids.repeat_interleave(n, 0)
        ids = input_ids.repeat_interleave(n, 0)
        return rows | {"input_ids": self.substitute(ids, repeat_words(words, n), uniform.to(ids.device))}

    def delta(self, input_ids: list[int]) -> tuple[int, float]:
        """(words that may move, Delta = 1 - prod_j q_j over the text's one-token words)."""
        row = torch.tensor([input_ids])
        words = self.words(row, torch.ones_like(row))
        overlap = self.table.overlap[row.clamp(0, len(self.table.overlap) - 1)]
        product = float(torch.where(words.whole, overlap, torch.ones_like(overlap)).prod())
        return int(words.count[0]), 1.0 - product

    def certificate(self, p: float, input_ids: list[int]) -> dict:
        h, delta = self.delta(input_ids)
        return {"words": h, "delta": round(delta, 6), "certified": p - delta > 0.5}

    @staticmethod
    def certified_accuracy(certs: list[dict], figure) -> dict:
        return {"accuracy": figure([c["certified"] for c in certs])}
