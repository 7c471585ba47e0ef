import numpy as np
import pytest

import attack_helpers
from robustft.attacks.victim import ONE_AT_A_TIME, TEXTATTACK_LIKE, Victim
from robustft.data.example import Example
from robustft.data.tasks import load_examples
from robustft.models.factory import tiny_bert


@pytest.fixture(scope="module", autouse=True)
def single_thread():
    yield from attack_helpers.one_thread()


@pytest.fixture(scope="module")
def tiny():
    return tiny_bert(num_labels=2, seed=0)


def test_batched_padded_cached_equals_one_at_a_time(tiny):
    model, tok = tiny
    examples = load_examples("sst2", "dev", n=12, seed=0)
    fast = Victim(model, tok, "sst2", batch_size=5).probs(examples)
    slow = Victim(model, tok, "sst2", mode=ONE_AT_A_TIME).probs(examples)
    padded = Victim(model, tok, "sst2", batch_size=5, mode=TEXTATTACK_LIKE, max_length=64).probs(examples)
    assert fast.shape == (12, 2)
    np.testing.assert_allclose(fast, slow, atol=1e-5)
    np.testing.assert_allclose(fast, padded, atol=1e-5)
    assert np.allclose(fast.sum(-1), 1.0)


def test_queries_count_distinct_inputs_and_cache_skips_the_model(tiny):
    model, tok = tiny
    v = Victim(model, tok, "sst2", batch_size=4)
    a, b = Example("a fine film", 1), Example("a poor film", 0)
    v.probs([a, b, a])
    assert v.queries == 2 and v.total_forward_rows == 2
    v.probs([a])
    assert v.queries == 2 and v.total_forward_rows == 2  # cached, already counted
    v.reset()
    v.probs([a])
    assert v.queries == 1 and v.total_forward_rows == 2  # counted again for a new example, still cached


def test_query_budget_returns_the_prefix_that_fits(tiny):
    model, tok = tiny
    v = Victim(model, tok, "sst2", query_budget=3)
    texts = [Example(f"text number {i}", 1) for i in range(5)]
    out = v.probs(texts[:1] + texts)  # the repeated first text is free
    assert len(out) == 4 and v.queries == 3 and v.exhausted
    assert len(v.probs(texts[:2])) == 2  # already-counted inputs cost nothing
    assert len(v.probs(texts[4:])) == 0


def test_pairs_and_bf16(tiny):
    model, tok = tiny
    pairs = [Example("a man sleeps", 0, "a person rests"), Example("a man sleeps", 0, "nobody rests")]
    p32 = Victim(model, tok, "snli" if model.config.num_labels == 3 else "rte").probs(pairs)
    p16 = Victim(model, tok, "rte", bf16=True).probs(pairs)
    assert p32.shape == (2, 2)
    np.testing.assert_allclose(p32, p16, atol=0.05)
    assert not np.allclose(p32[0], p32[1])  # the second text reaches the model


def test_truncates_to_the_model_maximum(tiny):
    model, tok = tiny
    v = Victim(model, tok, "sst2", max_length=16)
    long = Example(" ".join(["word"] * 300), 1)
    assert v.probs([long]).shape == (1, 2)
    assert v.token_length(long) > v.max_length
