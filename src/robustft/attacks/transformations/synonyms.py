"""Dictionary substitutes: WordNet synonyms (PWWS) and the counter-fitted 8-neighbour file (Alzantot, Jia, RIFT)."""

from __future__ import annotations

import functools

from robustft import resources
from robustft.attacks.transformations.base import Transformation
from robustft.attacks.words import is_one_word


class WordNetSynonyms(Transformation):
    """Lemmas of every WordNet synset of the word, one-word ones only (as TextAttack's WordSwapWordNet)."""

    name = "wordnet"

    def __init__(self):
        self.wn = resources.wordnet()

    @functools.lru_cache(maxsize=200_000)  # noqa: B019 - one instance per run; words repeat a lot
    def words_for(self, word: str) -> list[str]:
        low = word.lower()
        out: dict[str, None] = {}
        for synset in self.wn.synsets(low):
            for lemma in synset.lemmas():
                name = lemma.name().lower()
                if name != low and "_" not in name and is_one_word(name):
                    out[name] = None
        return list(out)

    def resources(self) -> dict[str, str]:
        root = resources.nltk_data_dir() / "corpora" / "wordnet"
        return {
            "wordnet/data.noun": str(root / "data.noun"),
            "wordnet/data.verb": str(root / "data.verb"),
            "wordnet/data.adj": str(root / "data.adj"),
            "wordnet/data.adv": str(root / "data.adv"),
        }


class CounterfittedNeighbours(Transformation):
    """Up to 8 neighbours from counter-fitted vectors (Jia et al. 2019's exact substitution set)."""

    name = "counterfitted"

    def __init__(self, max_candidates: int = 8, case_sensitive: bool = False):
        self.max_candidates, self.case_sensitive = max_candidates, case_sensitive
        self.table = resources.counterfitted_neighbors()

    def words_for(self, word: str) -> list[str]:
        # the file's words are lower-case: looked up as written (the RIFT release's PWWS), a capitalised word has none
        key = word if self.case_sensitive else word.lower()
        return [w for w in self.table.get(key, [])[: self.max_candidates] if is_one_word(w)]

    def config(self) -> dict:
        return {"name": self.name, "max_candidates": self.max_candidates, "case_sensitive": self.case_sensitive}

    def resources(self) -> dict[str, str]:
        return {"counterfitted_neighbors": str(resources.data_file(resources.COUNTERFITTED))}
