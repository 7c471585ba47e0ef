"""PSO (Zang et al., ACL 2020: "Word-level Textual Adversarial Attacking as Combinatorial Optimization"); as
TextAttack's `pso` recipe (attack_recipes/pso_zang_2020.py, v0.3.11).

- Substitutes: the paper's are HowNet sememe-based words (TextAttack: WordSwapHowNet). HowNet is not offline: the
  counter-fitted 8-neighbour file stands in (Jia et al.'s set, the project's synonym resource), so the candidate
  sets, and the attack's strength, differ from the paper's.
- Search: particle swarm, 60 particles, 20 iterations (paper, after Alzantot et al.; TextAttack), omega 0.8 -> 0.2,
  C1 0.8 -> 0.2, C2 0.2 -> 0.8, v_max 3 (paper), mutation probability 1 - 2 x share of words changed (authors'
  code; TextAttack); search/pso.py.
- Constraints: no repeated modification, NLTK stopwords (TextAttack); a pair's premise is never changed (the engine's
  pair view, TextAttack's InputColumnModification). The paper has no word cap or similarity constraint.
"""

from robustft.attacks.attack import Attack
from robustft.attacks.constraints import RepeatModification
from robustft.attacks.recipes.common import neighbour_source, shared_constraints, stopwords
from robustft.attacks.search.pso import ParticleSwarm

CONFIG = {
    "neighbours": "counterfitted",  # offline stand-in for HowNet sememe substitutes (Zang et al.; TextAttack)
    "max_candidates": 8,  # the file's most; HowNet has no fixed count
    "population": 60,  # Zang et al.; TextAttack pop_size=60
    "generations": 20,  # Zang et al.'s max iterations G = 20; TextAttack max_iters=20
    "v_max": 3.0,  # Zang et al.
    "max_turn_retries": 20,  # TextAttack (a turn redrawn until the constraints pass)
    "stopwords": "nltk",  # TextAttack's default StopwordModification
    "max_percent": None,  # none in the paper or TextAttack
    "similarity": None,
    "antonym_filter": False,
}


def build(victim, config: dict, mlm=None) -> Attack:
    constraints = [RepeatModification(), *stopwords(config), *shared_constraints(config)]
    search = ParticleSwarm(config["population"], config["generations"], config["v_max"], config["max_turn_retries"])
    return Attack("pso", victim, neighbour_source(config, victim), constraints, search, config)
