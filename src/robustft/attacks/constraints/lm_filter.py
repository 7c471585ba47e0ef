"""Language-model filter (Alzantot et al. 2018; Jia et al. 2019): a substitute must not lower the
log-probability of the +-`window` words around it by more than `max_drop`.

The original filter used the Google 1-billion-word LM, which is not available offline. The scorer is
pluggable; the default is a masked-LM pseudo-log-likelihood (Salazar et al. 2020: mask each token in
turn, sum the log-probabilities of the true tokens), whose scale differs from a left-to-right LM's.
The run records which scorer ran.
"""

from __future__ import annotations

import numpy as np

from robustft.attacks.constraints.base import Constraint


class MaskedLMPseudoLogLikelihood:
    """Sum over tokens of log p(token | text with that token masked), batched and cached per window text
    (`robustft.models.mlm.pseudo_log_likelihood` does the scoring)."""

    def __init__(self, mlm=None, tokenizer=None, batch_size: int = 128, source: str = ""):
        if mlm is None:
            from robustft.attacks.transformations.masked_lm import default_masked_lm

            mlm, tokenizer = default_masked_lm()
        self.mlm, self.tokenizer, self.batch_size = mlm.eval(), tokenizer, batch_size
        self._known: dict[str, float] = {}  # window text -> score; windows repeat across candidates
        which = (
            source or getattr(mlm, "mlm_source", "") or getattr(mlm.config, "name_or_path", "") or type(mlm).__name__
        )
        self.name = f"masked-lm-pll:{which}"  # recorded: which masked LM ran

    def __call__(self, texts: list[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self._known]
        if missing:
            for t, s in zip(missing, self.score(missing), strict=True):
                self._known[t] = float(s)
        return np.array([self._known[t] for t in texts], dtype=np.float64)

    def score(self, texts: list[str]) -> np.ndarray:
        from robustft.models.mlm import pseudo_log_likelihood

        return np.array(
            pseudo_log_likelihood(self.mlm, self.tokenizer, texts, batch_size=self.batch_size, precision="fp32"),
            dtype=np.float64,
        )


class LanguageModelFilter(Constraint):
    name = "lm-filter"

    def __init__(self, scorer=None, window: int = 6, max_drop: float = 5.0, compare_against_original: bool = True):
        self.scorer = scorer if scorer is not None else MaskedLMPseudoLogLikelihood()
        self.window, self.max_drop = window, max_drop
        self.compare_against_original = compare_against_original

    def filter(self, candidates, current, original):
        if not candidates:
            return []
        ref = original if self.compare_against_original else current
        texts, spans = [], []
        for c in candidates:
            start = len(texts)
            for i in sorted(c.last_modified):
                lo, hi = max(0, i - self.window), min(c.num_words, i + self.window + 1)
                texts += [ref.text_window(lo, hi), c.text_window(lo, hi)]
            spans.append((start, len(texts)))
        scores = self.scorer(texts)
        keep = []
        for c, (a, b) in zip(candidates, spans, strict=True):
            pairs = scores[a:b].reshape(-1, 2)
            if all(new >= old - self.max_drop for old, new in pairs):
                keep.append(c)
        return keep

    def config(self) -> dict:
        return {
            "name": self.name,
            "scorer": getattr(self.scorer, "name", type(self.scorer).__name__),
            "window": self.window,
            "max_drop": self.max_drop,
            "compare_against_original": self.compare_against_original,
        }
