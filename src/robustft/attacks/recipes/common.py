"""Pieces recipes share: the TextDefender unified protocol and how a recipe's config becomes parts."""

from __future__ import annotations

from robustft.attacks.constraints import Antonyms, MaxWordsPerturbed, SentenceSimilarity
from robustft.attacks.transformations import (
    CounterfittedNeighbours,
    WordNetSynonyms,
    glove_neighbours,
    model_embedding_neighbours,
)

# TextDefender (Li et al. 2021, "Searching for an effective defender"), section 4 of SPEC: the same
# constraints for every attack so numbers compare. The similarity is TextFooler's USE setting
# (angular, 15-word window, against the current text), replacing a recipe's own similarity constraint.
PROTOCOLS = {
    "textdefender": {
        "max_percent": 0.3,
        "similarity": {"encoder": "use", "threshold": 0.840845, "metric": "angular", "window_size": 15,
                       "compare_against_original": False, "skip_text_shorter_than_window": True},
        "query_budget_per_word": 50,
    },
}


def neighbour_source(config: dict, victim):
    """The word-substitution table a recipe's `neighbours` key names."""
    name = config["neighbours"]
    k = config.get("max_candidates")
    if name == "wordnet":
        return WordNetSynonyms()
    if name == "counterfitted":
        return CounterfittedNeighbours(min(k or 8, 8))
    if name == "glove":
        return glove_neighbours(k or 50, config.get("min_cos", 0.5))
    if name == "model":
        return model_embedding_neighbours(victim.model, victim.tokenizer, k or 50, config.get("min_cos", 0.5))
    raise ValueError(f"unknown neighbour source {name!r} (wordnet, counterfitted, glove, model)")


def shared_constraints(config: dict) -> list:
    """Max words perturbed, sentence similarity and antonym filter, as the config asks."""
    out = []
    if config.get("max_percent") is not None or config.get("max_num_words") is not None:
        out.append(MaxWordsPerturbed(config.get("max_percent"), config.get("max_num_words")))
    if config.get("antonym_filter"):
        out.append(Antonyms())
    if config.get("similarity"):
        out.append(SentenceSimilarity(**config["similarity"]))
    return out
