import numpy as np
import pytest

from robustft.attacks.victim import ONE_AT_A_TIME, PADDED_TO_MAX, Victim
from robustft.data.example import Example
from robustft.data.tasks import load_examples
from robustft.errors import ConfigError
from robustft.models.factory import tiny_bert


@pytest.fixture(scope="module")
def tiny():
    return tiny_bert(num_labels=2, seed=0)


def test_batched_padded_cached_equals_one_at_a_time(tiny):
    model, tok = tiny
    examples = load_examples("sst2", "dev", n=12, seed=0)
    fast = Victim(model, tok, "sst2", batch_size=5).probs(examples)
    slow = Victim(model, tok, "sst2", mode=ONE_AT_A_TIME).probs(examples)
    padded = Victim(model, tok, "sst2", batch_size=5, mode=PADDED_TO_MAX, max_length=64).probs(examples)
    assert fast.shape == (12, 2)
    np.testing.assert_allclose(fast, slow, atol=1e-5)
    np.testing.assert_allclose(fast, padded, atol=1e-5)
    assert np.allclose(fast.sum(-1), 1.0)


def test_two_query_units_and_the_cache(tiny):
    model, tok = tiny
    v = Victim(model, tok, "sst2", batch_size=4)
    a, b = Example("a fine film", 1), Example("a poor film", 0)
    v.probs([a, b, a])
    assert (v.queries, v.distinct_queries, v.total_forward_rows) == (3, 2, 2)  # TextAttack counts the repeat
    v.probs([a])
    assert (v.queries, v.distinct_queries, v.total_forward_rows) == (4, 2, 2)  # a cache hit still counts there
    v.reset()
    v.probs([a])
    assert (v.queries, v.distinct_queries, v.total_forward_rows) == (1, 1, 2)  # new example, still cached


def test_textattack_budget_truncates_the_request_to_the_queries_left(tiny):
    model, tok = tiny
    v = Victim(model, tok, "sst2", query_budget=3)  # unit "textattack", the default
    texts = [Example(f"text number {i}", 1) for i in range(5)]
    out = v.probs(texts[:1] + texts)  # the repeated first text costs a query too
    assert len(out) == 3 and v.queries == 3 and v.distinct_queries == 2 and v.exhausted
    assert len(v.probs(texts[:2])) == 0


def test_distinct_budget_lets_repeats_through_free(tiny):
    model, tok = tiny
    v = Victim(model, tok, "sst2", query_budget=3, budget_unit="distinct")
    texts = [Example(f"text number {i}", 1) for i in range(5)]
    out = v.probs(texts[:1] + texts)
    assert len(out) == 4 and v.distinct_queries == 3 and v.queries == 4 and v.exhausted
    assert len(v.probs(texts[:2])) == 2  # already-counted inputs cost nothing in this unit
    assert len(v.probs(texts[4:])) == 0
    with pytest.raises(ConfigError, match="query_budget_unit"):
        Victim(model, tok, "sst2", budget_unit="calls")


def test_pairs_and_precision(tiny):
    model, tok = tiny
    pairs = [Example("a man sleeps", 0, "a person rests"), Example("a man sleeps", 0, "nobody rests")]
    p32 = Victim(model, tok, "rte").probs(pairs)
    p16 = Victim(model, tok, "rte", precision="bf16").probs(pairs)
    assert p32.shape == (2, 2)
    np.testing.assert_allclose(p32, p16, atol=0.05)
    assert not np.allclose(p32[0], p32[1])  # the second text reaches the model
    assert Victim(model, tok, "rte", precision="bf16").concrete_precision == "bf16"
    with pytest.raises(ConfigError, match="precision"):
        Victim(model, tok, "rte", precision="half")


def test_full_precision_probs_bypass_cache_and_count_in_both_units(tiny):
    model, tok = tiny
    v = Victim(model, tok, "sst2", precision="bf16")
    e = Example("a fine film", 1)
    low = v.probs([e])[0]
    full = v.full_precision_probs(e)
    np.testing.assert_allclose(full, Victim(model, tok, "sst2").probs([e])[0], atol=1e-6)
    assert not np.array_equal(low, full)  # not the cached bf16 answer
    assert (v.queries, v.distinct_queries) == (2, 2)


def test_truncates_to_the_model_maximum_and_knows_what_the_model_reads(tiny):
    model, tok = tiny
    v = Victim(model, tok, "sst2", max_length=16)
    long = Example(" ".join(["word"] * 300), 1)
    assert v.probs([long]).shape == (1, 2)
    assert v.token_length(long) > v.max_length
    assert v.visible_chars(long, "text_a") == len(" ".join(["word"] * 14))  # 16 tokens less [CLS] and [SEP]
    assert v.visible_chars(Example("short", 1), "text_a") is None


def test_small_bf16_calls_run_on_one_thread_and_the_threads_come_back(tiny, monkeypatch):
    import torch

    model, tok = tiny
    seen = []
    forward = model.forward
    monkeypatch.setattr(model, "forward", lambda **kw: seen.append(torch.get_num_threads()) or forward(**kw))
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        texts = [Example(f"text number {i}", 0) for i in range(8)]
        bf16 = Victim(model, tok, "sst2", precision="bf16", batch_size=8)
        bf16.probs(texts[:3])  # 3 rows: below 8
        bf16.probs(texts[3:])  # 5 more rows: still below
        bf16.probs([Example(f"another {i}", 0) for i in range(8)])  # 8 rows: every thread
        Victim(model, tok, "sst2", precision="fp32").probs([Example("one fp32 row", 0)])
        off = Victim(model, tok, "sst2", precision="bf16")
        off.bf16_one_thread_below = 0
        off.probs([Example("one more row", 0)])
        assert seen == [1, 1, 2, 2, 2]
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
