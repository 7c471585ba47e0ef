"""Part of speech: a substitute must keep the word's universal POS tag in context (NLTK perceptron tagger)."""

from __future__ import annotations

import functools

from robustft import resources
from robustft.attacks.constraints.base import Constraint


class PartOfSpeech(Constraint):
    """As TextAttack's PartOfSpeech with the NLTK tagger; TextFooler allows noun<->verb swaps."""

    name = "part-of-speech"

    def __init__(self, allow_verb_noun_swap: bool = True):
        resources.nltk_data_dir()
        from nltk.tag.mapping import map_tag
        from nltk.tag.perceptron import PerceptronTagger

        self.tagger = PerceptronTagger(lang="eng")
        self.map_tag = map_tag
        self.allow_verb_noun_swap = allow_verb_noun_swap

    @functools.lru_cache(maxsize=65536)  # noqa: B019 - one instance per run
    def tags(self, words: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(self.map_tag("en-ptb", "universal", t) for _, t in self.tagger.tag(list(words)))

    def _compatible(self, a: str, b: str) -> bool:
        return a == b or (self.allow_verb_noun_swap and {a, b} <= {"NOUN", "VERB"})

    def filter(self, candidates, current, original):
        if not candidates:
            return []
        ref = self.tags(current.words)
        return [c for c in candidates
                if all(self._compatible(ref[i], self.tags(c.words)[i]) for i in c.last_modified)]

    def config(self) -> dict:
        return {"name": self.name, "tagger": "nltk averaged_perceptron_tagger_eng", "tagset": "universal",
                "allow_verb_noun_swap": self.allow_verb_noun_swap}

    def resources(self) -> dict[str, str]:
        root = resources.nltk_data_dir() / "taggers" / "averaged_perceptron_tagger_eng"
        return {f"tagger/{p.name}": str(p) for p in sorted(root.glob("*.json"))}
