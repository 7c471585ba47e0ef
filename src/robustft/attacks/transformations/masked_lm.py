"""Masked-LM candidates as in BERT-Attack (Li et al. 2020): one forward pass over the *unmasked* text,
the top-K predictions at each word's sub-word positions become its substitutes.

A word of several sub-words gets combinations of the top `combination_k` pieces per position (BERT-Attack's
code: 4), ranked by summed log-probability; the original enumerates every combination of up to 12
positions (4^12), we keep a beam of `max_combinations` partial combinations instead, which finds the
same top candidates for the 2-3 piece words that occur in practice.
"""

from __future__ import annotations

import functools

import torch

from robustft import runtime
from robustft.attacks.transformations.base import Transformation
from robustft.attacks.words import AttackedText, is_one_word
from robustft.data.batching import model_inputs, tokenize_pad


def default_masked_lm():
    """The project's masked LM (issue 6: MiniLM with a trained MLM head), imported lazily."""
    try:
        from robustft.models.mlm import load_masked_lm
    except ImportError as exc:
        from robustft.errors import MissingResource

        raise MissingResource(
            "BERT-Attack needs a masked LM: robustft.models.mlm.load_masked_lm is not available in this install"
        ) from exc
    return load_masked_lm()


class MaskedLMCandidates(Transformation):
    name = "masked-lm"

    def __init__(
        self,
        mlm=None,
        tokenizer=None,
        max_candidates: int = 48,
        combination_k: int = 4,
        max_combinations: int = 64,
        max_subwords: int = 12,
        stopwords: frozenset[str] = frozenset(),
        max_length: int = 512,
        source: str = "",
    ):
        if mlm is None:
            mlm, tokenizer = default_masked_lm()
        self.mlm, self.tokenizer = mlm.eval(), tokenizer
        self.max_candidates, self.combination_k = max_candidates, combination_k
        self.max_combinations, self.max_subwords = max_combinations, max_subwords
        self.stop = frozenset(stopwords)  # never proposed (BERT-Attack's filter_words)
        self.max_length = max_length
        self.source = (
            source or getattr(mlm, "mlm_source", "") or getattr(mlm.config, "name_or_path", "") or type(mlm).__name__
        )  # recorded: which masked LM ran

    @functools.lru_cache(maxsize=4096)  # noqa: B019 - greedy searches ask for the same text repeatedly
    def _predictions(self, text: str):
        """(top log-probs, top ids, offsets) for every token of `text` from one unmasked forward pass."""
        enc = tokenize_pad(self.tokenizer, [text], max_length=self.max_length, return_offsets_mapping=True)
        offsets = enc.pop("offset_mapping")[0].tolist()
        with torch.no_grad():
            logits = self.mlm(**runtime.to_device(model_inputs(enc), runtime.model_device(self.mlm))).logits[0].float()
        logp = torch.log_softmax(logits, dim=-1)
        k = max(self.max_candidates, self.combination_k)
        top_lp, top_ids = logp.topk(k, dim=-1)
        return top_lp.cpu(), top_ids.cpu(), offsets

    def candidates(self, text: AttackedText, indices: list[int]) -> dict[int, list[str]]:
        if not indices:
            return {}
        top_lp, top_ids, offsets = self._predictions(text.text)
        out = {}
        for i in indices:
            start, end = text.spans[i]
            positions = [t for t, (s, e) in enumerate(offsets) if e > s and s >= start and e <= end]
            out[i] = self._words(text.words[i], positions, top_lp, top_ids) if positions else []
        return out

    def _words(self, word, positions, top_lp, top_ids) -> list[str]:
        if len(positions) == 1:
            pieces = [
                (self.tokenizer.convert_ids_to_tokens(int(t)), float(lp))
                for t, lp in zip(top_ids[positions[0]], top_lp[positions[0]], strict=True)
            ]
        elif len(positions) <= self.max_subwords:
            beam = [("", 0.0)]
            for n, p in enumerate(positions):
                options = [
                    (self.tokenizer.convert_ids_to_tokens(int(t)), float(lp))
                    for t, lp in zip(top_ids[p][: self.combination_k], top_lp[p][: self.combination_k], strict=True)
                ]
                # The first piece starts a word; later ones must be continuations ("##ing").
                options = [(tok if n == 0 else tok[2:], lp) for tok, lp in options if tok.startswith("##") == (n > 0)]
                beam = sorted(
                    ((prefix + tok, score + lp) for prefix, score in beam for tok, lp in options), key=lambda x: -x[1]
                )[: self.max_combinations]
            pieces = beam
        else:
            return []
        low, seen, out = word.lower(), set(), []
        for piece, _ in pieces:
            cand = piece.lower()
            if (
                cand.startswith("##")
                or cand == low
                or cand in seen
                or cand in self.stop
                or not is_one_word(cand)
                or not cand.isalpha()
                or (word.isascii() and not cand.isascii())
            ):
                continue
            seen.add(cand)
            out.append(cand)
            if len(out) >= self.max_candidates:
                break
        return out

    def config(self) -> dict:
        return {
            "name": self.name,
            "source": self.source,
            "max_candidates": self.max_candidates,
            "combination_k": self.combination_k,
            "max_combinations": self.max_combinations,
            "max_subwords": self.max_subwords,
            "filtered_words": len(self.stop),
        }
