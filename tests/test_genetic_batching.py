"""The genetic search batched across examples (several examples in flight, sharing every model call) gives each
example the record the one-at-a-time search gives it: same seeded draws, same candidates, same result text,
success and query counts. The oracle is the one-at-a-time run of the same attack on the same examples."""

import pytest

from robustft.attacks.example_loop import attack_each
from robustft.attacks.recipes import build_attack
from robustft.attacks.victim import Victim
from robustft.data.example import Example
from robustft.models.factory import tiny_bert

SENTENCES = [
    "the film is good and the acting is great .",
    "a good , nice story with a fine cast .",
    "bad plot , awful ending and poor jokes .",
    "a fine movie about a small town",
    "the music is nice but the story is weak",
    "an honest , funny and moving picture .",
    "dull characters in a tired , slow script",
]


def outcome(record) -> tuple:
    return (
        record.index,
        record.result,
        record.adversarial,
        record.adversarial_pred,
        record.swaps,
        record.queries,
        record.distinct_queries,
    )


def attack_both_ways(model, tok, examples, concurrent, mlm=None, **overrides):
    """(records one at a time, records `concurrent` at once, forwards of each), each run on a fresh victim."""
    runs = []
    for n in (1, concurrent):
        calls = []
        hook = model.register_forward_pre_hook(lambda module, args, calls=calls: calls.append(1))
        victim = Victim(model, tok, "sst2", precision="fp32", batch_size=64)
        attack = build_attack("genetic", victim, mlm=mlm, overrides=overrides)
        assert attack.shares_calls  # the genetic search takes part in shared calls
        records = []
        attack_each(attack, list(enumerate(examples)), 3, records.append, n)
        hook.remove()
        runs.append((sorted(records, key=lambda r: r.index), len(calls)))
    (one, one_calls), (many, many_calls) = runs
    return one, many, one_calls, many_calls


@pytest.mark.parametrize("compat", ["alzantot", "rift", "textattack"])
def test_genetic_batched_across_examples_keeps_every_examples_record(compat):
    model, tok = tiny_bert(num_labels=2, seed=0)
    model.eval()
    examples = [Example(s, i % 2, id=f"e{i}") for i, s in enumerate(SENTENCES)]
    one, many, one_calls, many_calls = attack_both_ways(
        model,
        tok,
        examples,
        4,
        neighbours="wordnet",
        lm_scorer=None,
        population=6,
        generations=4,
        compat=compat,
    )
    assert [outcome(r) for r in many] == [outcome(r) for r in one]
    for a, b in zip(one, many, strict=True):
        assert b.adversarial_probs == pytest.approx(a.adversarial_probs, abs=1e-5)
    attacked = [r for r in one if r.result != "skipped"]
    assert len(attacked) >= 3 and all(r.queries > 6 for r in attacked)  # the searches ran, not skipped
    assert many_calls < one_calls  # the examples' requests went through the model together


@pytest.mark.slow
def test_genetic_batched_across_examples_keeps_real_minilm_records_on_sst2():
    import torch

    from robustft.data.tasks import get_task, load_examples
    from robustft.models.factory import load_classifier
    from robustft.models.mlm import load_masked_lm

    torch.manual_seed(0)  # the alias's classification head is drawn: the same head both ways
    model, tok = load_classifier("minilm", label_names=get_task("sst2").label_names)
    model.eval()
    examples = load_examples("sst2", "dev", n=4, seed=0)
    one, many, one_calls, many_calls = attack_both_ways(
        model, tok, examples, 4, mlm=load_masked_lm(None), population=12, generations=4
    )
    assert [outcome(r) for r in many] == [outcome(r) for r in one]
    assert any(r.result != "skipped" for r in one)
    assert many_calls < one_calls
