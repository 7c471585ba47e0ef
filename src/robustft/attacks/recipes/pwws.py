"""PWWS: Probability Weighted Word Saliency (Ren et al., ACL 2019); as TextAttack's `pwws` recipe.

- Substitutes: WordNet synonyms, one-word lemmas of every synset (paper; TextAttack WordSwapWordNet).
  RIFT's variant (Dong et al. 2021) uses the counter-fitted neighbours: neighbours="counterfitted".
- Word order: softmax(saliency) * best substitute's gain; saliency = drop of p(true) when the word
  becomes the unknown token (paper, eq. 6-8). TextAttack multiplies by the raw best score instead.
- Constraints: stopwords (NLTK list; TextAttack uses its own ~250-word list), no repeated modification.
  The paper has no similarity or max-words constraint.
"""

from robustft.attacks.attack import Attack
from robustft.attacks.constraints import RepeatModification, StopwordModification
from robustft.attacks.recipes.common import neighbour_source, shared_constraints
from robustft.attacks.search import GreedyWordImportance

CONFIG = {
    "neighbours": "wordnet",         # Ren et al. 2019
    "max_candidates": None,          # every synonym (paper)
    "max_percent": None,             # none in the paper
    "similarity": None,              # none in the paper
    "antonym_filter": False,
    "query_budget": None,
    "query_budget_per_word": None,
}


def build(victim, config: dict, mlm=None) -> Attack:
    constraints = [RepeatModification(), StopwordModification(), *shared_constraints(config)]
    return Attack("pwws", victim, neighbour_source(config, victim), constraints,
                  GreedyWordImportance("weighted-saliency"), config.get("query_budget_per_word"),
                  config.get("query_budget"), config)
