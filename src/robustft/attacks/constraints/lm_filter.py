"""Language-model filter (Alzantot et al. 2018; Jia et al. 2019): a substitute must not lower the language
model's score around it by more than `max_drop` (nats), compared with the original text.

The original filters used the Google 1-billion-word LM (Alzantot) and the Learning-to-Write LM (Jia et al.'s
precomputed scores, which the RIFT release reads), neither available offline. The scorer is
pluggable and the run records which one ran:

- `masked-lm-pll` (default): the masked-LM pseudo-log-likelihood (Salazar et al. 2020: mask each token in
  turn, sum the log-probabilities of the true tokens) of the +-`window` words, closest to Jia et al.'s
  log-probability of the window (it sees how the swap changes its neighbours' likelihood). Its scale differs
  from a left-to-right LM's. It costs one masked forward per token of every scored window: 3-5x the victim's
  own queries in the genetic attack in fp32, about 1.4x in bf16 (`precision`; docs/performance.md).
- `masked-lm-word`: log p(substitute | the window, the word masked), Alzantot et al.'s own form (the LM scores
  the candidate words in their context). All 8 neighbours of a word share one masked forward, so it costs a
  small fraction of the victim's queries; it does not see effects on the neighbouring words.
"""

from __future__ import annotations

import numpy as np

from robustft import runtime
from robustft.attacks.constraints.base import Constraint


class _MaskedLMScorer:
    """A scorer of (window text, (start, end) of the swapped word in it) items, cached per item (windows repeat
    across candidates and generations); subclasses say what is scored."""

    kind = ""

    def __init__(self, mlm=None, tokenizer=None, batch_size: int = 128, source: str = "", precision: str = "fp32"):
        if mlm is None:
            from robustft.attacks.transformations.masked_lm import default_masked_lm

            mlm, tokenizer = default_masked_lm()
        self.mlm, self.tokenizer, self.batch_size = mlm.eval(), tokenizer, batch_size
        # The masked LM's forwards (genetic's lm_precision); resolved now, so a bad value fails before the attack.
        self.precision = runtime.resolve_precision(precision, runtime.model_device(self.mlm))
        self._known: dict = {}
        which = (
            source or getattr(mlm, "mlm_source", "") or getattr(mlm.config, "name_or_path", "") or type(mlm).__name__
        )
        # recorded: which scorer, which masked LM and at what precision it ran
        self.name = f"{self.kind}:{which}" + ("" if self.precision == "fp32" else f" ({self.precision})")

    def key(self, item):
        return item

    def __call__(self, items: list[tuple[str, tuple[int, int]]]) -> np.ndarray:
        keys = [self.key(it) for it in items]
        missing = {k: it for k, it in zip(keys, items, strict=True) if k not in self._known}
        if missing:
            for k, s in zip(missing, self.score(list(missing.values())), strict=True):
                self._known[k] = float(s)
        return np.array([self._known[k] for k in keys], dtype=np.float64)

    def score(self, items) -> list[float]:
        raise NotImplementedError


class MaskedLMPseudoLogLikelihood(_MaskedLMScorer):
    """Pseudo-log-likelihood of the whole window (`robustft.models.mlm.pseudo_log_likelihood`)."""

    kind = "masked-lm-pll"

    def key(self, item):
        return item[0]  # the window's text: its score does not depend on which word was swapped

    def score(self, items) -> list[float]:
        from robustft.models.mlm import pseudo_log_likelihood

        texts = [text for text, _ in items]
        return pseudo_log_likelihood(
            self.mlm, self.tokenizer, texts, batch_size=self.batch_size, precision=self.precision
        )


class MaskedLMWordLogProb(_MaskedLMScorer):
    """log p(the swapped word | its window) (`robustft.models.mlm.masked_span_log_prob`)."""

    kind = "masked-lm-word"

    def score(self, items) -> list[float]:
        from robustft.models.mlm import masked_span_log_prob

        return masked_span_log_prob(
            self.mlm, self.tokenizer, items, batch_size=self.batch_size, precision=self.precision
        )


SCORERS = {cls.kind: cls for cls in (MaskedLMPseudoLogLikelihood, MaskedLMWordLogProb)}


WINDOW_SCOPES = ("text", "line")


class LanguageModelFilter(Constraint):
    name = "lm-filter"

    def __init__(
        self,
        scorer=None,
        window: int = 6,
        max_drop: float = 5.0,
        compare_against_original: bool = True,
        window_scope: str = "text",
    ):
        if window_scope not in WINDOW_SCOPES:
            raise ValueError(f"window_scope: expected one of {', '.join(WINDOW_SCOPES)}, got {window_scope!r}")
        self.scorer = scorer if scorer is not None else MaskedLMPseudoLogLikelihood()
        self.window, self.max_drop = window, max_drop
        self.compare_against_original, self.window_scope = compare_against_original, window_scope

    @staticmethod
    def _line(text, i: int) -> tuple[int, int]:
        """The word range of the line holding word i. A pair is attacked as premise + line break + hypothesis
        (attacks/view.py): window_scope "line" keeps the window within the perturbed sentence, as Jia et al. score
        the hypothesis alone; "text" (the default, TextAttack's) lets it cross into the premise."""
        if "\n" not in text.text:
            return 0, text.num_words
        start, end = text.text.rfind("\n", 0, text.spans[i][0]), text.text.find("\n", text.spans[i][1])
        end = len(text.text) if end < 0 else end
        inside = [k for k, (a, _) in enumerate(text.spans) if start < a < end]
        return inside[0], inside[-1] + 1

    @staticmethod
    def _item(text, i: int, lo: int, hi: int) -> tuple[str, tuple[int, int]]:
        """The window's text and the character span of word i within it."""
        base = text.spans[lo][0]
        return text.text_window(lo, hi), (text.spans[i][0] - base, text.spans[i][1] - base)

    def filter(self, candidates, current, original):
        if not candidates:
            return []
        ref = original if self.compare_against_original else current
        items, spans = [], []
        for c in candidates:
            start = len(items)
            for i in sorted(c.last_modified):
                first, end = self._line(c, i) if self.window_scope == "line" else (0, c.num_words)
                lo, hi = max(first, i - self.window), min(end, i + self.window + 1)
                items += [self._item(ref, i, lo, hi), self._item(c, i, lo, hi)]
            spans.append((start, len(items)))
        scores = self.scorer(items)
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
            # recorded only when not the default, so runs made before the setting keep their hash
            **({"window_scope": self.window_scope} if self.window_scope != "text" else {}),
        }
