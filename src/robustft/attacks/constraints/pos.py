"""Part of speech: a substitute must keep the word's universal POS tag in context (NLTK perceptron tagger)."""

from __future__ import annotations

import functools

from robustft import resources
from robustft.attacks.constraints.base import Constraint

CONTEXTS = ("textattack", "sentence")
BEFORE, AFTER = 4, 3  # TextAttack's PartOfSpeech: words[i-4:i] and words[i+1:i+4]


class PartOfSpeech(Constraint):
    """As TextAttack's PartOfSpeech with the NLTK tagger; TextFooler allows noun<->verb swaps.

    context="textattack" (default): the original word and the substitute are each tagged inside the
    window of 4 words before and 3 after, taken from the *original* text (TextAttack compares against
    the original); the tag read is that of the first occurrence of the word in the window, as
    TextAttack's `word_list.index(word)` does. context="sentence": both whole current texts are tagged
    and the tag at the position compared.
    """

    name = "part-of-speech"

    def __init__(self, allow_verb_noun_swap: bool = True, context: str = "textattack"):
        if context not in CONTEXTS:
            raise ValueError(f"pos_context: expected one of {', '.join(CONTEXTS)}, got {context!r}")
        resources.nltk_data_dir()
        from nltk.tag.mapping import map_tag
        from nltk.tag.perceptron import PerceptronTagger

        self.tagger = PerceptronTagger(lang="eng")
        self.map_tag = map_tag
        self.allow_verb_noun_swap = allow_verb_noun_swap
        self.context = context

    @functools.lru_cache(maxsize=65536)  # noqa: B019 - one instance per run
    def tags(self, words: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(self.map_tag("en-ptb", "universal", t) for _, t in self.tagger.tag(list(words)))

    def window_tag(self, words: tuple[str, ...], i: int, word: str) -> str:
        """The tag of `word` put at position i of `words`, tagged in TextAttack's window."""
        context = words[max(i - BEFORE, 0) : i] + (word,) + words[i + 1 : i + 1 + AFTER]
        return self.tags(context)[context.index(word)]

    def _compatible(self, a: str, b: str) -> bool:
        return a == b or (self.allow_verb_noun_swap and {a, b} <= {"NOUN", "VERB"})

    def filter(self, candidates, current, original):
        if not candidates:
            return []
        if self.context == "textattack":
            ref = original.words
            return [
                c
                for c in candidates
                if all(
                    self._compatible(self.window_tag(ref, i, ref[i]), self.window_tag(ref, i, c.words[i]))
                    for i in c.last_modified
                )
            ]
        ref = self.tags(current.words)
        return [c for c in candidates if all(self._compatible(ref[i], self.tags(c.words)[i]) for i in c.last_modified)]

    def config(self) -> dict:
        return {
            "name": self.name,
            "tagger": "nltk averaged_perceptron_tagger_eng",
            "tagset": "universal",
            "allow_verb_noun_swap": self.allow_verb_noun_swap,
            "context": self.context,
            "window": [BEFORE, AFTER] if self.context == "textattack" else None,
        }

    def resources(self) -> dict[str, str]:
        root = resources.nltk_data_dir() / "taggers" / "averaged_perceptron_tagger_eng"
        return {f"tagger/{p.name}": str(p) for p in sorted(root.glob("*.json"))}
