"""Word-position constraints: stopwords, no repeated modification, max words perturbed."""

from __future__ import annotations

import math

from robustft import resources
from robustft.attacks.constraints.base import Constraint
from robustft.attacks.words import AttackedText

STOPWORD_LISTS = ("nltk", "textfooler")


class StopwordModification(Constraint):
    """Stopwords are never replaced: NLTK's English list ("nltk": PWWS, the genetic attack, TextAttack's
    default) or TextFooler's 266 words ("textfooler": TextFooler, BERT-Attack's filter_words).

    Words are compared lower-cased; TextAttack compares them as written (case_sensitive=True), so a
    capitalised "The" at a sentence start is attackable there.
    """

    name = "stopwords"

    def __init__(self, source: str = "nltk", case_sensitive: bool = False):
        if source not in STOPWORD_LISTS:
            raise ValueError(f"stopwords: expected one of {', '.join(STOPWORD_LISTS)}, got {source!r}")
        self.source, self.case_sensitive = source, case_sensitive
        self.words = resources.stopwords() if source == "nltk" else resources.textfooler_stopwords()

    def modifiable(self, text: AttackedText) -> set[int]:
        fold = (lambda w: w) if self.case_sensitive else str.lower
        return {i for i, w in enumerate(text.original_words) if fold(w) not in self.words}

    def config(self) -> dict:
        return {
            "name": self.name,
            "source": self.source,
            "size": len(self.words),
            "case_sensitive": self.case_sensitive,
        }

    def resources(self) -> dict[str, str]:
        if self.source == "textfooler":
            return {"stopwords": str(resources.data_file(resources.TEXTFOOLER_STOPWORDS))}
        return {"stopwords": str(resources.nltk_data_dir() / "corpora" / "stopwords" / "english")}


class RepeatModification(Constraint):
    """A word already changed is not changed again (greedy searches)."""

    name = "repeat-modification"

    def modifiable(self, text: AttackedText) -> set[int]:
        return set(range(text.num_words)) - set(text.modified)


class MaxWordsPerturbed(Constraint):
    """At most ceil(max_percent * words) and at most `max_num_words` words differ from the original.

    ceil as TextAttack's MaxWordsPerturbed; so a text of 1-3 words may change one word at 30%.
    """

    name = "max-words-perturbed"

    def __init__(self, max_percent: float | None = None, max_num_words: int | None = None):
        self.max_percent, self.max_num_words = max_percent, max_num_words

    def limit(self, num_words: int) -> int:
        limit = num_words
        if self.max_percent is not None:
            limit = min(limit, math.ceil(num_words * self.max_percent))
        if self.max_num_words is not None:
            limit = min(limit, self.max_num_words)
        return limit

    def modifiable(self, text: AttackedText) -> set[int]:
        if len(text.modified) >= self.limit(text.num_words):
            return set(text.modified)  # quota used: only already-changed words may change again
        return set(range(text.num_words))

    def filter(self, candidates, current, original):
        return [c for c in candidates if len(c.modified) <= self.limit(original.num_words)]

    def config(self) -> dict:
        return {
            "name": self.name,
            "max_percent": self.max_percent,
            "max_num_words": self.max_num_words,
            "rounding": "ceil",
        }
