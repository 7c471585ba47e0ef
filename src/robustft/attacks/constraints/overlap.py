"""Word-position constraints: stopwords, no repeated modification, max words perturbed."""

from __future__ import annotations

import math

from robustft import resources
from robustft.attacks.constraints.base import Constraint
from robustft.attacks.words import AttackedText


class StopwordModification(Constraint):
    """Stopwords are never replaced (NLTK's English list unless given)."""

    name = "stopwords"

    def __init__(self, words: frozenset[str] | None = None):
        self.words = resources.stopwords() if words is None else frozenset(words)
        self._source = "nltk-english" if words is None else "custom"

    def modifiable(self, text: AttackedText) -> set[int]:
        return {i for i, w in enumerate(text.original_words) if w.lower() not in self.words}

    def config(self) -> dict:
        return {"name": self.name, "source": self._source, "size": len(self.words)}

    def resources(self) -> dict[str, str]:
        if self._source != "nltk-english":
            return {}
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
        return {"name": self.name, "max_percent": self.max_percent, "max_num_words": self.max_num_words,
                "rounding": "ceil"}
