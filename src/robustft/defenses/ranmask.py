"""RanMASK (Zeng et al. 2021/2023): a share of the words (rate 0.9, at least 2 kept) each replaced by one mask
token, prediction by an ensemble of such copies, and the certificate of their Theorem 1 (beta = 1).

Certified threat model: the attacker changes at most d words of the perturbable field and keeps the number of
words (a word: a word-start token and its continuation pieces, punctuation a word of its own, `[UNK]` a word):
a substitute may have any number of pieces or be out of vocabulary. Insertions, deletions, and substitutes that
split into several words (a hyphen, an apostrophe) change the word count and are outside it. The certified
classifier is the majority vote over masked copies (`vote: votes`), not the ensemble's logit mean.

Why it holds: a masked word becomes ONE mask token and the row is re-packed (`smoothing.mask_words`), and which
words are masked depends only on the word count; so when every changed word is masked, the two texts' copies are
identical token for token, and the vote shares move by at most the chance that a copy leaves some changed word
unmasked, Delta_d = 1 - C(h - d, k) / C(h, k) (h words, k kept). Certified at d when p - Delta_d > 0.5.
"""

from __future__ import annotations

import math

import torch

from robustft.adversary import smoothing
from robustft.defenses.base import Defense, repeat_words
from robustft.errors import ConfigError

RADII = (1, 2, 3, 4, 5, 10)  # certified accuracy reported against these numbers of changed words
DEFINITION = "true label certified against d changed words, the word count kept (RanMASK, Theorem 1, beta = 1)"


def masking_delta(h: int, kept: int, d: int) -> float:
    """Delta_d: the chance that a copy keeping `kept` of `h` words unmasked keeps one of d changed ones."""
    return 1.0 - math.comb(h - d, kept) / math.comb(h, kept) if d <= h else 1.0


def radius(p: float, h: int, kept: int) -> int:
    """The largest d with p - Delta_d > 0.5 (-1 when p <= 0.5)."""
    out = -1
    for d in range(h + 1):
        if p - masking_delta(h, kept, d) <= 0.5:
            break
        out = d
    return out


class RanMASK(Defense):
    name = "ranmask"
    definition = DEFINITION

    def __init__(self, settings, tokenizer, task, neighbors=None):
        if tokenizer.mask_token_id is None:
            raise ConfigError("RanMASK needs a tokenizer with a mask token")
        super().__init__(settings, tokenizer, task, neighbors)

    def masked_count(self, count: torch.Tensor) -> torch.Tensor:
        return smoothing.masked_count(count.cpu(), self.settings.rate, self.settings.min_keep)

    def mask(self, input_ids, attention_mask, token_type_ids, words: smoothing.Words, keys: torch.Tensor) -> dict:
        """The rows with the words of the smallest `keys` [B, W] masked (`smoothing.mask_words`)."""
        tok = self.tokenizer
        return smoothing.mask_words(
            input_ids,
            attention_mask,
            words,
            self.masked_count(words.count),
            keys.to(input_ids.device),
            tok.mask_token_id,
            tok.pad_token_id if tok.pad_token_id is not None else 0,
            token_type_ids,
        )

    def training_copy(self, batch: dict) -> dict:
        ids = batch["input_ids"]
        words = self.words(ids, batch["attention_mask"])
        keys = torch.rand(len(ids), max(1, int(words.count.max())), device=ids.device)
        return self.mask(ids, batch["attention_mask"], batch.get("token_type_ids"), words, keys)

    def copies(self, input_ids, attention_mask, token_type_ids, words, generators) -> dict:
        n = self.settings.copies
        width = max(1, int(words.count.max()))
        keys = torch.full((len(input_ids) * n, width), 2.0)  # past a row's words: never chosen
        for r, g in enumerate(generators):  # a word's key depends on its row alone
            keys[r * n : (r + 1) * n, : int(words.count[r])] = torch.rand(n, int(words.count[r]), generator=g)
        types = None if token_type_ids is None else token_type_ids.repeat_interleave(n, 0)
        ids, mask = input_ids.repeat_interleave(n, 0), attention_mask.repeat_interleave(n, 0)
        return self.mask(ids, mask, types, repeat_words(words, n), keys)

    def certificate(self, p: float, input_ids: list[int]) -> dict:
        row = torch.tensor([input_ids])
        h = int(self.words(row, torch.ones_like(row)).count[0])
        kept = h - int(self.masked_count(torch.tensor([h]))[0])
        return {"words": h, "kept": kept, "radius": radius(p, h, kept)}

    @staticmethod
    def certified_accuracy(certs: list[dict], figure) -> dict:
        radii = [c["radius"] for c in certs]
        by_words = {str(d): figure([r >= d for r in radii]) for d in RADII}
        return {"accuracy_by_changed_words": by_words, "mean_radius": sum(max(r, 0) for r in radii) / len(radii)}
