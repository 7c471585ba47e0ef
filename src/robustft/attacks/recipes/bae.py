"""BAE-R (Garg & Ramakrishnan, EMNLP 2020: "BAE: BERT-based Adversarial Examples"); as TextAttack's `bae` recipe
(attack_recipes/bae_garg_2019.py, v0.3.11), replacement mode only.

- Importance: drop of the true-class score when the word is deleted (paper, after TextFooler).
- Substitutes: the word masked, the masked LM's top K = 50 whole words at the mask (paper); TextAttack also drops
  those under probability 5e-4 (min_confidence) and keeps sub-word pieces with "##" stripped (we drop them, as
  the author's email quoted in TextAttack's recipe says). The masked LM is robustft's (`--mlm`; BERT-base in the
  paper and TextAttack), so candidates differ from theirs.
- Constraints: no repeated modification, NLTK stopwords (TextAttack's default list), same POS (noun<->verb allowed),
  USE cosine >= 0.936338023 = 1 - 0.2/pi in a 15-word window against the original text, texts shorter than the
  window not checked (TextAttack, from the paper's 0.8 and the author's email); offline USE = multilingual v3.
- Choice: among successes the one most similar to the original (paper; greedy search's rule).
"""

from robustft.attacks.attack import Attack
from robustft.attacks.constraints import PartOfSpeech, RepeatModification
from robustft.attacks.recipes.common import shared_constraints, stopwords
from robustft.attacks.search import GreedyWordImportance
from robustft.attacks.transformations.masked_word import MaskedWordCandidates

CONFIG = {
    "max_candidates": 50,  # Garg & Ramakrishnan: K = 50
    "min_confidence": 5e-4,  # TextAttack's WordSwapMaskedLM default; the paper has none (0 switches it off)
    "stopwords": "nltk",  # TextAttack's default StopwordModification
    "pos_allow_verb_noun_swap": True,  # TextAttack's PartOfSpeech(allow_verb_noun_swap=True)
    "pos_context": "textattack",
    "similarity": {
        "encoder": "use",  # offline stand-in: USE multilingual v3 (TextAttack: USE v4 on TF Hub)
        "threshold": 0.936338023,  # TextAttack: 1 - (1 - 0.8) / pi, the paper's 0.8 on TextFooler's angle scale
        "metric": "cosine",
        "window_size": 15,  # the author's email (TextAttack's recipe)
        "compare_against_original": True,
        "skip_text_shorter_than_window": True,  # email: threshold 0.1 for shorter texts, i.e. almost always kept
    },
    "max_percent": None,  # none in the paper or TextAttack
    "antonym_filter": False,
}


def build(victim, config: dict, mlm=None) -> Attack:
    model, tokenizer = mlm if mlm is not None else (None, None)
    transformation = MaskedWordCandidates(
        model, tokenizer, config["max_candidates"], config["min_confidence"], max_length=victim.max_length
    )
    constraints = [
        RepeatModification(),
        *stopwords(config),
        PartOfSpeech(config["pos_allow_verb_noun_swap"], config["pos_context"]),
        *shared_constraints(config),
    ]
    return Attack("bae", victim, transformation, constraints, GreedyWordImportance("delete"), config)
