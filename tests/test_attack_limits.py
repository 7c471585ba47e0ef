"""Limits that keep one example from stalling or misleading a run: the per-example time limit, no queries
on words the model never reads, label names checked, the masked-LM default decided without the network,
and successes found in bf16 re-checked in fp32."""

import time
from types import SimpleNamespace

import pytest

from attack_helpers import KeywordModel
from robustft.attacks.recipes import build_attack
from robustft.attacks.results import FAILED, SUCCEEDED
from robustft.attacks.victim import Victim
from robustft.data.example import Example
from robustft.data.tasks import get_task
from robustft.errors import ConfigError
from robustft.models.factory import tiny_bert
from robustft.models.mlm import loading as mlm  # the module whose lookups the tests replace
from robustft.models.predict import check_labels


@pytest.fixture(scope="module")
def tok():
    return tiny_bert()[1]


class SlowKeywordModel(KeywordModel):
    def forward(self, *args, **kwargs):
        time.sleep(0.02)
        return super().forward(*args, **kwargs)


def test_an_example_over_its_time_limit_fails_with_the_reason(tok):
    text = " ".join(["the plot was fine and the cast was good"] * 20)  # 180 words: a long greedy search
    example = Example(text, 1, id="long")
    slow = build_attack(
        "pwws", Victim(SlowKeywordModel(tok), tok, "sst2", batch_size=4), overrides={"time_limit_s": 0.3}
    )
    start = time.perf_counter()
    record = slow.run(example, 0, 0)
    assert time.perf_counter() - start < 3.0
    assert record.result == FAILED and "time limit of 0.3 s" in record.reason and record.queries > 0
    with pytest.raises(ConfigError, match="time_limit_s"):
        build_attack("pwws", Victim(KeywordModel(tok), tok, "sst2"), overrides={"time_limit_s": 0})


class RecordingVictim(Victim):
    def probs(self, examples):
        self.asked = getattr(self, "asked", []) + [e.text_a for e in examples]
        return super().probs(examples)


def test_no_query_is_spent_on_words_past_the_truncation_point(tok):
    # 14 words the model reads (16 tokens less [CLS] and [SEP]), then 34 it never sees.
    words = ["good"] * 4 + ["plain"] * 10 + ["great"] * 34
    example = Example(" ".join(words), 1, id="cut")
    victim = RecordingVictim(KeywordModel(tok), tok, "sst2", max_length=16)
    record = build_attack("textfooler", victim, overrides={"similarity": None}).run(example, 0, 0)
    assert "34 words past the truncation point not attacked" in record.reason
    assert all(s["index"] < 14 for s in record.swaps)
    for text in victim.asked:  # every queried text keeps the unread tail as it was
        assert text.endswith(" ".join(["great"] * 34))
    assert len(victim.asked) < 1 + 48  # the old engine probed all 48 words for importance alone


def test_label_names_decide_not_the_label_count():
    sst2 = SimpleNamespace(num_labels=2, id2label={0: "negative", 1: "positive"})
    assert check_labels(SimpleNamespace(config=sst2), get_task("sst2")) is None
    with pytest.raises(ConfigError, match="trained on another task"):
        check_labels(SimpleNamespace(config=sst2), get_task("rte"))
    with pytest.raises(ConfigError, match="2 labels"):
        check_labels(SimpleNamespace(config=sst2), get_task("snli"))
    unnamed = SimpleNamespace(num_labels=2, id2label={0: "LABEL_0", 1: "LABEL_1"})
    assert "unnamed" in check_labels(SimpleNamespace(config=unnamed), get_task("rte"))


def test_default_masked_lm_never_asks_the_network(monkeypatch):
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", mlm.MLM_ENV):
        monkeypatch.delenv(var, raising=False)
    asked = []
    monkeypatch.setattr(
        mlm,
        "load_hub_mlm",
        lambda name: asked.append(name) or (_ for _ in ()).throw(AssertionError(f"tried the hub for {name}")),
    )
    monkeypatch.setattr(mlm, "load_shipped_mlm", lambda: ("shipped", None))
    monkeypatch.setattr(mlm, "_cached_snapshot", lambda repo: None)
    assert mlm.load_masked_lm() == ("shipped", None) and asked == []


def test_default_masked_lm_uses_a_cached_hub_model_and_says_so(monkeypatch, tmp_path):
    monkeypatch.delenv(mlm.MLM_ENV, raising=False)
    loaded = SimpleNamespace(mlm_source=None)
    monkeypatch.setattr(mlm, "_cached_snapshot", lambda repo: str(tmp_path))
    monkeypatch.setattr(mlm, "load_hub_mlm", lambda name: (loaded, name))
    model, where = mlm.load_masked_lm()
    assert where == str(tmp_path) and model.mlm_source == "bert-base-uncased (local cache)"


class Bf16Flip(KeywordModel):
    """Under autocast, answers the opposite for texts without "bad": a success only a reduced-precision
    run would report once the attack has swapped "bad" away."""

    def forward(self, input_ids, attention_mask=None, token_type_ids=None):
        import torch

        out = super().forward(input_ids, attention_mask, token_type_ids)
        if torch.is_autocast_cpu_enabled():
            no_bad = ~(self.weights[input_ids] < 0).any(-1)
            out.logits = torch.where(no_bad[:, None], out.logits.flip(-1), out.logits)
        return out


def test_a_success_under_bf16_not_confirmed_in_fp32_is_attacked_again_in_fp32(tok):
    example = Example("a bad film", 0)
    victim = Victim(Bf16Flip(tok), tok, "sst2", precision="bf16")
    record = build_attack("textfooler", victim, overrides={"similarity": None}).run(example, 0, 0)
    fp32 = build_attack(
        "textfooler", Victim(Bf16Flip(tok), tok, "sst2", precision="fp32"), overrides={"similarity": None}
    )
    reference = fp32.run(example, 0, 0)
    assert "not confirmed in fp32: attacked again in fp32" in record.reason
    # the record is the fp32 attack's: same outcome, text, prediction and queries, not a bf16 artefact
    assert (record.result, record.adversarial, record.adversarial_pred) == (
        reference.result,
        reference.adversarial,
        reference.adversarial_pred,
    )
    assert (record.queries, record.distinct_queries) == (reference.queries, reference.distinct_queries)
    assert victim.precision == "bf16"  # the victim is back in its own precision for the next example
    assert victim.probs([Example("a fine film", 0)])[0].argmax() == 0  # and its bf16 answers (flipped) again
    off = build_attack(
        "textfooler",
        Victim(Bf16Flip(tok), tok, "sst2", precision="bf16"),
        overrides={"similarity": None, "recheck_full_precision": False},
    ).run(example, 0, 0)
    assert off.result == SUCCEEDED and "fp32" not in off.reason


def test_a_victim_keeps_one_cache_per_precision(tok):
    victim = Victim(Bf16Flip(tok), tok, "sst2", precision="bf16")
    text = [Example("a fine film", 0)]
    under_bf16 = victim.probs(text)[0]
    with victim.in_precision("fp32"):
        assert victim.probs(text)[0].argmax() != under_bf16.argmax()  # not the cached bf16 answer
    assert (victim.probs(text)[0] == under_bf16).all()


def test_a_compiled_victim_answers_reduced_precision_calls_and_leaves_the_fp32_re_checks_eager(tok, monkeypatch):
    import torch

    compiled_calls = []

    def fake_compile(model, dynamic):  # the routing, without minutes of compiling a test model
        def compiled(**inputs):
            compiled_calls.append(torch.is_autocast_cpu_enabled())
            return model(**inputs)

        return compiled

    monkeypatch.setattr(torch, "compile", fake_compile)
    victim = Victim(KeywordModel(tok), tok, "sst2", precision="bf16", compile_model=True)
    victim.probs([Example("a fine film", 0)])
    victim.full_precision_probs(Example("a good film", 0))
    with victim.in_precision("fp32"):
        victim.probs([Example("a nice film", 0)])
    assert compiled_calls == [True]  # only the bf16 call went through the compiled model


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("query_budget", 0),
        ("query_budget", -1),
        ("query_budget", 2.5),
        ("query_budget_per_word", float("nan")),
        ("query_budget_per_word", 0),
        ("time_limit_s", float("inf")),
        ("time_limit_s", "10"),
        ("query_budget", True),
    ],
)
def test_bad_engine_settings_are_config_errors_naming_the_key(tok, key, value):
    with pytest.raises(ConfigError, match=key):
        build_attack("pwws", Victim(KeywordModel(tok), tok, "sst2"), overrides={key: value})
