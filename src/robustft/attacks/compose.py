"""Compose an attack from parts in Python: a goal, a transformation, constraints and a search (docs/attacks.md,
"Composing an attack"). Every part the recipes are built from is importable from here; `compose` checks the parts
and returns the same `Attack` the recipes build, so `attack.run(example)` gives the records `robustft attack` writes.
"""

from __future__ import annotations

from robustft.attacks.attack import Attack, AttackContext, Search
from robustft.attacks.constraints import (
    Antonyms,
    Constraint,
    LanguageModelFilter,
    LevenshteinEditDistance,
    MaxWordsPerturbed,
    PartOfSpeech,
    RepeatModification,
    SentenceSimilarity,
    StopwordModification,
)
from robustft.attacks.goal import GoalResult, TargetedClassification, UntargetedClassification
from robustft.attacks.recipes.common import ENGINE_DEFAULTS
from robustft.attacks.search import Genetic, GreedyWordImportance
from robustft.attacks.search.pso import ParticleSwarm
from robustft.attacks.transformations import (
    CharacterEdits,
    CompositeTransformation,
    CounterfittedNeighbours,
    MaskedLMCandidates,
    Transformation,
    WordNetSynonyms,
    glove_neighbours,
)
from robustft.attacks.transformations.masked_word import MaskedWordCandidates
from robustft.attacks.victim import Victim
from robustft.errors import ConfigError, suggest


def _check(what: str, value, kind) -> None:
    if not isinstance(value, kind):
        raise ConfigError(f"compose: {what} must be a {kind.__name__} (robustft.attacks.compose), got {value!r}")


def compose(
    victim: Victim,
    transformation: Transformation,
    constraints: list[Constraint],
    search: Search,
    goal=UntargetedClassification,
    name: str = "composed",
    **settings,
) -> Attack:
    """An attack on `victim`: `transformation` proposes substitutes, every one of `constraints` must accept them,
    `search` picks among them, `goal` (a class taking (victim, view), or a functools.partial of one) says what
    success is. `settings` are the engine's (query_budget, query_budget_per_word, time_limit_s, ...: ENGINE_DEFAULTS).
    """
    _check("victim", victim, Victim)
    _check("transformation", transformation, Transformation)
    _check("search", search, Search)
    for n, constraint in enumerate(constraints):
        _check(f"constraints[{n}]", constraint, Constraint)
    if not callable(goal):
        raise ConfigError(f"compose: goal must be a goal class such as UntargetedClassification, got {goal!r}")
    for key in settings:
        if key not in ENGINE_DEFAULTS:
            raise ConfigError(f"compose: no engine setting {key!r}{suggest(key, ENGINE_DEFAULTS)}")
    return Attack(name, victim, transformation, list(constraints), search, {**ENGINE_DEFAULTS, **settings}, goal)


__all__ = [
    "compose",
    "Attack",
    "AttackContext",
    "Search",
    "Victim",
    "GoalResult",
    "UntargetedClassification",
    "TargetedClassification",
    "Transformation",
    "WordNetSynonyms",
    "CounterfittedNeighbours",
    "glove_neighbours",
    "MaskedLMCandidates",
    "MaskedWordCandidates",
    "CharacterEdits",
    "CompositeTransformation",
    "Constraint",
    "StopwordModification",
    "RepeatModification",
    "MaxWordsPerturbed",
    "PartOfSpeech",
    "SentenceSimilarity",
    "Antonyms",
    "LanguageModelFilter",
    "LevenshteinEditDistance",
    "GreedyWordImportance",
    "Genetic",
    "ParticleSwarm",
]
