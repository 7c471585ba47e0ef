"""Masked-word candidates as in BAE-R (Garg & Ramakrishnan, EMNLP 2020): the word is replaced by the mask token and
the masked LM's most probable whole words at that position become its substitutes (one forward pass per word, the
words of one request in one batch). TextAttack's `WordSwapMaskedLM(method="bae")` differs where docs/attacks.md says.
"""

from __future__ import annotations

import torch

from robustft import runtime
from robustft.attacks.transformations.base import Transformation
from robustft.attacks.transformations.masked_lm import default_masked_lm
from robustft.attacks.words import AttackedText, is_one_word
from robustft.data.batching import model_inputs, tokenize_pad


class MaskedWordCandidates(Transformation):
    name = "masked-word"

    def __init__(self, mlm=None, tokenizer=None, max_candidates: int = 50, min_confidence: float = 0.0, max_length=512):
        if mlm is None:
            mlm, tokenizer = default_masked_lm()
        self.mlm, self.tokenizer = mlm.eval(), tokenizer
        self.max_candidates, self.min_confidence, self.max_length = max_candidates, min_confidence, max_length
        self.source = getattr(mlm, "mlm_source", "") or getattr(mlm.config, "name_or_path", "") or type(mlm).__name__

    def candidates(self, text: AttackedText, indices: list[int]) -> dict[int, list[str]]:
        if not indices:
            return {}
        mask = self.tokenizer.mask_token
        enc = tokenize_pad(self.tokenizer, [text.put_token(i, mask) for i in indices], max_length=self.max_length)
        with torch.no_grad():
            inputs = runtime.to_device(model_inputs(enc), runtime.model_device(self.mlm))
            logits = self.mlm(**inputs).logits.float().cpu()
        out = {}
        for row, i in enumerate(indices):
            where = (enc["input_ids"][row] == self.tokenizer.mask_token_id).nonzero()
            # a mask past the truncation point has no prediction (TextAttack: no candidates either)
            out[i] = self._words(text.words[i], torch.softmax(logits[row, where[0, 0]], -1)) if len(where) else []
        return out

    def _words(self, word: str, probs: torch.Tensor) -> list[str]:
        """The most probable whole words, best first, until `max_candidates` or a probability < min_confidence."""
        low, out = word.lower(), []
        for p, token_id in zip(*probs.sort(descending=True), strict=True):
            if float(p) < self.min_confidence or len(out) >= self.max_candidates:
                break
            cand = self.tokenizer.convert_ids_to_tokens(int(token_id)).lower()
            # sub-word pieces are no words (the author, as quoted in TextAttack's recipe; TextAttack keeps them with
            # "##" stripped), nor is punctuation or the word itself
            if cand.startswith("##") or cand == low or not cand.isalpha() or not is_one_word(cand):
                continue
            if word.isascii() and not cand.isascii():
                continue
            out.append(cand)
        return out

    def config(self) -> dict:
        return {
            "name": self.name,
            "source": self.source,
            "max_candidates": self.max_candidates,
            "min_confidence": self.min_confidence,
        }
