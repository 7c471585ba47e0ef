"""BERT-Attack (Li et al., EMNLP 2020); as TextAttack's `bert-attack` recipe.

- Importance: drop of the true-class score when the word is masked (paper, section 3.1; TextAttack's
  recipe uses the unknown token: importance="unk").
- Substitutes: top-48 predictions of a masked LM at the word's sub-word positions on the unmasked
  text (K = 48, paper; TextAttack 0.3.11: 8); words of several pieces: combinations of the top 4 per
  piece ranked by log-probability (paper's code), capped here by a beam of 64. The paper's filter_words
  (TextFooler's 266-word list) are never attacked nor proposed (stopwords="textfooler"; TextAttack:
  NLTK's list for positions, no candidate filter). The masked LM is robustft.models.mlm.load_masked_lm()
  unless one is given.
- Constraints: no repeated modification, at most 40% of words changed (paper), USE cosine >= 0.2 over
  whole texts against the original (TextAttack).
"""

from robustft.attacks.attack import Attack
from robustft.attacks.constraints import RepeatModification
from robustft.attacks.recipes.common import shared_constraints, stopwords
from robustft.attacks.search import GreedyWordImportance
from robustft.attacks.transformations import MaskedLMCandidates

CONFIG = {
    "importance": "mask",  # Li et al.; TextAttack: "unk"
    "max_candidates": 48,  # Li et al.: K = 48 (TextAttack 0.3.11: 8)
    "combination_k": 4,  # BERT-Attack code: top 4 per sub-word
    "max_combinations": 64,  # our beam cap on sub-word combinations
    "stopwords": "textfooler",  # BERT-Attack's filter_words; TextAttack: "nltk"
    "filter_candidates": True,  # BERT-Attack's code drops filter_words from candidates; TextAttack does not
    "max_percent": 0.4,  # Li et al.
    "similarity": {
        "encoder": "use",
        "threshold": 0.2,
        "metric": "cosine",
        "window_size": None,
        "compare_against_original": True,
        "skip_text_shorter_than_window": False,
    },  # TextAttack
    "antonym_filter": False,
}


def build(victim, config: dict, mlm=None) -> Attack:
    model, tokenizer = mlm if mlm is not None else (None, None)
    stop = stopwords(config)
    stop_words = stop[0].words if stop and config["filter_candidates"] else frozenset()
    transformation = MaskedLMCandidates(
        model,
        tokenizer,
        config["max_candidates"],
        config["combination_k"],
        config["max_combinations"],
        stopwords=stop_words,
        max_length=victim.max_length,
    )
    constraints = [RepeatModification(), *stop, *shared_constraints(config)]
    return Attack(
        "bert-attack", victim, transformation, constraints, GreedyWordImportance(config["importance"]), config
    )
