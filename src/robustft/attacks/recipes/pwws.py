"""PWWS: Probability Weighted Word Saliency (Ren et al., ACL 2019); as TextAttack's `pwws` recipe.

- Substitutes: WordNet synonyms, one-word lemmas of every synset (paper; TextAttack WordSwapWordNet).
  RIFT's variant (Dong et al. 2021) uses the counter-fitted neighbours: neighbours="counterfitted".
- Word order: softmax(saliency) * the best substitute's gain, saliency = drop of p(true) when the word
  becomes the unknown token (paper, eq. 6-8: gain = delta p). TextAttack 0.3.11 multiplies by the best
  substitute's raw score instead: saliency_gain="raw".
- Swaps: TextAttack's greedy step (each word in order takes its best substitute on the current text if that
  raises the score: apply="improving"), or Ren et al.'s Algorithm 1 and the RIFT release (each word's best
  substitute chosen once on the original text, applied in order whatever its gain: apply="ordered").
- Constraints: stopwords (NLTK's English list, as TextAttack's default StopwordModification; stopwords=None:
  none, as Ren et al.'s and the RIFT release's code), no repeated modification. The paper has no similarity or
  max-words constraint.
"""

from robustft.attacks.attack import Attack
from robustft.attacks.constraints import RepeatModification
from robustft.attacks.recipes.common import neighbour_source, shared_constraints, stopwords
from robustft.attacks.search import GreedyWordImportance

CONFIG = {
    "neighbours": "wordnet",  # Ren et al. 2019
    "max_candidates": None,  # every synonym (paper)
    "saliency_gain": "delta",  # Ren et al.: delta p; TextAttack: "raw" (best substitute's score)
    "apply": "improving",  # TextAttack's greedy step; "ordered": Ren et al.'s Algorithm 1, the RIFT release
    "case_sensitive_lookup": False,  # counter-fitted neighbours of the lower-cased word; True: as written (RIFT)
    "stopwords": "nltk",  # TextAttack's default list
    "max_percent": None,  # none in the paper
    "similarity": None,  # none in the paper
    "antonym_filter": False,
}


def build(victim, config: dict, mlm=None) -> Attack:
    constraints = [RepeatModification(), *stopwords(config), *shared_constraints(config)]
    search = GreedyWordImportance("weighted-saliency", saliency_gain=config["saliency_gain"], apply=config["apply"])
    return Attack("pwws", victim, neighbour_source(config, victim), constraints, search, config)
