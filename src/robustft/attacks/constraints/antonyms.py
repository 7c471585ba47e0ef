"""Antonym filter: never swap a word for one of its antonyms (PPDB + WordNet pairs of counter-fitting)."""

from __future__ import annotations

import functools

from robustft import resources
from robustft.attacks.constraints.base import Constraint

ANTONYM_FILES = ("counterfitting/ppdb_antonyms.txt", "counterfitting/wordnet_antonyms.txt")


@functools.lru_cache(maxsize=1)
def antonym_pairs() -> frozenset[tuple[str, str]]:
    """Symmetric (word, antonym) pairs from nmrksic/counter-fitting's linguistic constraints."""
    pairs = set()
    for rel in ANTONYM_FILES:
        path = resources.data_file(rel, "get it from nmrksic/counter-fitting linguistic_constraints/")
        for line in path.read_text(encoding="utf-8").split("\n"):
            parts = line.split()
            if len(parts) == 2:
                a, b = parts[0].lower(), parts[1].lower()
                pairs.add((a, b))
                pairs.add((b, a))
    return frozenset(pairs)


class Antonyms(Constraint):
    name = "antonyms"

    def __init__(self):
        self.pairs = antonym_pairs()

    def filter(self, candidates, current, original):
        keep = []
        for c in candidates:
            if not any((original.words[i].lower(), c.words[i].lower()) in self.pairs for i in c.last_modified):
                keep.append(c)
        return keep

    def config(self) -> dict:
        return {"name": self.name, "files": list(ANTONYM_FILES), "pairs": len(self.pairs)}

    def resources(self) -> dict[str, str]:
        return {rel: str(resources.data_file(rel)) for rel in ANTONYM_FILES}
