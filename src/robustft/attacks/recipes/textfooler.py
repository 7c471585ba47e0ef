"""TextFooler (Jin et al., AAAI 2020); as TextAttack's `textfooler` recipe, with the offline substitutes.

- Importance: drop of the true-class score when the word is deleted (paper, eq. 2).
- Substitutes: the paper takes up to 50 neighbours with cosine >= 0.5 in counter-fitted vectors. Those
  vectors are not offline; their 8 nearest neighbours are (Jia et al.'s file), so the default is
  neighbours="counterfitted" (<= 8, a subset of the paper's set). "glove" (GloVe 6B 50d, 50 neighbours,
  cos >= 0.5) and "model" (the victim's own input embeddings) are the alternatives; plain GloVe puts
  antonyms close, so the antonym filter (PPDB + WordNet pairs of counter-fitting) is on.
- Stopwords: TextFooler's own 266-word list (its code; TextAttack passes the same list).
- Constraints: no repeated modification, same POS (noun<->verb allowed) tagged in TextAttack's window
  (4 words before, 3 after, from the original text), sentence similarity >= 0.840845 angular in a
  15-word window against the current text, texts shorter than the window not checked (TextAttack's
  UniversalSentenceEncoder settings; offline USE = multilingual v3).
"""

from robustft.attacks.attack import Attack
from robustft.attacks.constraints import PartOfSpeech, RepeatModification
from robustft.attacks.recipes.common import USE_WINDOW_SIMILARITY, neighbour_source, shared_constraints, stopwords
from robustft.attacks.search import GreedyWordImportance

CONFIG = {
    "neighbours": "counterfitted",  # offline stand-in for 50 counter-fitted neighbours (see above)
    "max_candidates": 50,  # Jin et al.: N = 50 (the 8-neighbour file caps it at 8)
    "min_cos": 0.5,  # Jin et al.: delta = 0.5 (glove/model sources)
    "stopwords": "textfooler",  # Jin et al.'s code; TextAttack's textfooler recipe
    "antonym_filter": True,  # stands in for counter-fitting's antonym repulsion
    "pos_allow_verb_noun_swap": True,  # TextAttack's PartOfSpeech setting for this recipe
    "pos_context": "textattack",  # 4 words before, 3 after, original text; "sentence": whole current text
    "similarity": dict(USE_WINDOW_SIMILARITY),  # USE >= 0.840845 angular, 15-word window, current text
    "max_percent": None,  # none in the paper
}


def build(victim, config: dict, mlm=None) -> Attack:
    constraints = [
        RepeatModification(),
        *stopwords(config),
        PartOfSpeech(config["pos_allow_verb_noun_swap"], config["pos_context"]),
        *shared_constraints(config),
    ]
    return Attack(
        "textfooler", victim, neighbour_source(config, victim), constraints, GreedyWordImportance("delete"), config
    )
