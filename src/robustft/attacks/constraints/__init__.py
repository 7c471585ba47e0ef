"""Constraints on word substitutions: positions (stopwords, repeats, max words) and candidates (POS,
sentence similarity, antonyms, language model, character edit distance)."""

from robustft.attacks.constraints.antonyms import Antonyms
from robustft.attacks.constraints.base import Constraint
from robustft.attacks.constraints.edit_distance import LevenshteinEditDistance
from robustft.attacks.constraints.lm_filter import (
    SCORERS,
    LanguageModelFilter,
    MaskedLMPseudoLogLikelihood,
    MaskedLMWordLogProb,
)
from robustft.attacks.constraints.overlap import MaxWordsPerturbed, RepeatModification, StopwordModification
from robustft.attacks.constraints.pos import PartOfSpeech
from robustft.attacks.constraints.similarity import SentenceSimilarity

__all__ = [
    "Constraint",
    "StopwordModification",
    "RepeatModification",
    "MaxWordsPerturbed",
    "PartOfSpeech",
    "SentenceSimilarity",
    "Antonyms",
    "LanguageModelFilter",
    "MaskedLMPseudoLogLikelihood",
    "MaskedLMWordLogProb",
    "SCORERS",
    "LevenshteinEditDistance",
]
