"""Substitute-word generators: WordNet, counter-fitted neighbours, embedding neighbours, masked LM, character edits."""

from robustft.attacks.transformations.base import Transformation
from robustft.attacks.transformations.characters import CharacterEdits
from robustft.attacks.transformations.composite import CompositeTransformation
from robustft.attacks.transformations.embedding import EmbeddingNeighbours, glove_neighbours, model_embedding_neighbours
from robustft.attacks.transformations.masked_lm import MaskedLMCandidates
from robustft.attacks.transformations.synonyms import CounterfittedNeighbours, WordNetSynonyms

__all__ = [
    "Transformation",
    "WordNetSynonyms",
    "CounterfittedNeighbours",
    "EmbeddingNeighbours",
    "glove_neighbours",
    "model_embedding_neighbours",
    "MaskedLMCandidates",
    "CharacterEdits",
    "CompositeTransformation",
]
