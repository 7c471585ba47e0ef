"""Genetic attack (Alzantot et al., EMNLP 2018) in Jia et al. (EMNLP 2019)'s faster form, as RIFT uses it.

- Substitutes: the counter-fitted 8-neighbour file (Jia et al.'s exact set; Alzantot: 8 nearest within
  distance 0.5 in counter-fitted space).
- Search: population 60, 40 generations (Jia et al. / RIFT; Alzantot: 20), temperature 0.3 (Alzantot's
  code), candidates computed once on the original text (Jia et al.; faster=False recomputes them).
  compat="textattack" reproduces TextAttack 0.3.11's AlzantotGeneticAlgorithm (parent selection by
  softmax(-score/T), no re-mutation of a swapped word, no constraint check after crossover, candidates
  recomputed per member, the previous elite returned after the last generation); see search/genetic.py.
- Constraints: stopwords (TextAttack's alzantot recipe), at most 20% of words changed (Alzantot), LM
  filter: log-prob of the +-6-word window may drop by at most 5 (Jia et al.). Their LM (the Learning-to-Write
  LM; Alzantot's: Google 1B) is not offline: the scorer is a masked-LM pseudo-log-likelihood of the window
  (`lm_scorer="masked-lm-pll"`), or the cheaper masked-LM log-probability of the swapped word in its window
  (`"masked-lm-word"`, Alzantot's form; constraints/lm_filter.py compares them), recorded in the run's config;
  lm_scorer=None switches the filter off. --protocol rift: no stopword filter and no cap (Jia et al.'s code).
"""

from robustft.attacks.attack import Attack
from robustft.attacks.constraints import SCORERS, LanguageModelFilter
from robustft.attacks.recipes.common import neighbour_source, shared_constraints, stopwords
from robustft.attacks.search import Genetic

CONFIG = {
    "neighbours": "counterfitted",  # Jia et al. 2019
    "max_candidates": 8,
    "population": 60,  # Alzantot et al.; Jia et al.
    "generations": 40,  # Jia et al. (Alzantot: 20)
    "temperature": 0.3,  # Alzantot's code
    "faster": True,  # Jia et al.
    "compat": "alzantot",  # Alzantot's code; "textattack": TextAttack 0.3.11's; "rift": Jia et al.'s / RIFT's
    "stopwords": "nltk",  # TextAttack's alzantot/faster-alzantot recipes (default list)
    "lm_scorer": "masked-lm-pll",  # offline stand-in for Jia et al.'s Learning-to-Write LM
    "lm_window": 6,  # Jia et al.: +-6 words
    "lm_window_scope": "text",  # a pair's window may cross into the premise (TextAttack); "line": Jia et al.'s
    "lm_max_drop": 5.0,  # Jia et al.
    # The LM filter's forwards: auto = bf16 on CPUs with native bf16 (1.8x faster; same outcome on 150 paired SST-2
    # test examples, 99.5% same swap decisions; docs/performance.md), fp32 on others; "fp32" scores exactly as before.
    "lm_precision": "auto",
    "max_percent": 0.2,  # Alzantot et al.
    "similarity": None,
    "antonym_filter": False,
}


def build(victim, config: dict, mlm=None) -> Attack:
    constraints = [*stopwords(config), *shared_constraints(config)]
    scorer = config.get("lm_scorer")
    if scorer in SCORERS:
        model, tokenizer = mlm if mlm is not None else (None, None)
        constraints.append(
            LanguageModelFilter(
                SCORERS[scorer](model, tokenizer, precision=config["lm_precision"]),
                config["lm_window"],
                config["lm_max_drop"],
                window_scope=config["lm_window_scope"],
            )
        )
    elif scorer is not None:
        raise ValueError(f"unknown lm_scorer {scorer!r} ({', '.join(SCORERS)} or None)")
    search = Genetic(
        config["population"], config["generations"], config["temperature"], config["faster"], compat=config["compat"]
    )
    return Attack("genetic", victim, neighbour_source(config, victim), constraints, search, config)
