"""BERT-Attack (Li et al., EMNLP 2020); as TextAttack's `bert-attack` recipe.

- Importance: drop of the true-class score when the word is masked (paper, section 3.1; TextAttack's
  recipe uses the unknown token: importance="unk").
- Substitutes: top-48 predictions of a masked LM at the word's sub-word positions on the unmasked
  text (K = 48, paper); words of several pieces: combinations of the top 4 per piece ranked by
  log-probability (paper's code), capped here by a beam of 64. Stopwords are never proposed (paper's
  filter_words). The masked LM is robustft.models.mlm.load_masked_lm() unless one is given.
- Constraints: stopwords, no repeated modification, at most 40% of words changed (paper: "perturb
  percentage" limit 40%), USE cosine >= 0.2 over whole texts against the original (TextAttack).
"""

from robustft.attacks.attack import Attack
from robustft.attacks.constraints import RepeatModification, StopwordModification
from robustft.attacks.recipes.common import shared_constraints
from robustft.attacks.search import GreedyWordImportance
from robustft.attacks.transformations import MaskedLMCandidates

CONFIG = {
    "importance": "mask",            # Li et al.; TextAttack: "unk"
    "max_candidates": 48,            # Li et al.: K = 48
    "combination_k": 4,              # BERT-Attack code: top 4 per sub-word
    "max_combinations": 64,          # our beam cap on sub-word combinations
    "max_percent": 0.4,              # Li et al.
    "similarity": {"encoder": "use", "threshold": 0.2, "metric": "cosine", "window_size": None,
                   "compare_against_original": True, "skip_text_shorter_than_window": False},  # TextAttack
    "antonym_filter": False,
    "query_budget": None,
    "query_budget_per_word": None,
}


def build(victim, config: dict, mlm=None) -> Attack:
    model, tokenizer = mlm if mlm is not None else (None, None)
    transformation = MaskedLMCandidates(model, tokenizer, config["max_candidates"], config["combination_k"],
                                        config["max_combinations"])
    constraints = [RepeatModification(), StopwordModification(), *shared_constraints(config)]
    return Attack("bert-attack", victim, transformation, constraints, GreedyWordImportance(config["importance"]),
                  config.get("query_budget_per_word"), config.get("query_budget"), config)
