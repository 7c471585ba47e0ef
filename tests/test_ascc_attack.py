"""The white-box ASCC attack as a recipe: argmax of the hull weights back to words, TextAttack-style records,
one example at a time through the same interface (and runner) as the black-box recipes."""

import pytest
import torch

from robustft import runs
from robustft.attacks.example_loop import run_attack
from robustft.attacks.hull_attack import AsccAttack
from robustft.attacks.recipes import build_attack, recipe_config
from robustft.attacks.results import FAILED, SKIPPED, SUCCEEDED, summarize
from robustft.attacks.victim import Victim
from robustft.attacks.words import split_words
from robustft.config import AttackConfig
from robustft.data.batching import collate, encode
from robustft.data.example import Example
from robustft.models.factory import tiny_bert
from robustft.training.objectives import build_objective

# "good" has the adversarial neighbour "bad": a model that reads the word is flipped by the swap.
NEIGHBORS = {"good": ["bad", "fine"], "film": ["movie", "picture"], "man": ["guy"]}


@pytest.fixture(scope="module")
def trained():
    torch.manual_seed(0)
    model, tok = tiny_bert(2, seed=0, initializer_range=0.2)
    examples = [
        Example(f"{a} {w} film", int(w == "good")) for a in ("a", "the", "one", "that") for w in ("good", "bad")
    ]
    batch = collate(encode(tok, examples, 16), tok.pad_token_id)
    objective = build_objective("standard")
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(40):
        model.train()
        optimizer.zero_grad()
        objective.loss(model, batch)[0].backward()
        optimizer.step()
    return model.eval(), tok


def ascc(model, tok, task="sst2", **overrides):
    return AsccAttack(Victim(model, tok, task), recipe_config("ascc", overrides=overrides), neighbors=NEIGHBORS)


def attack_all(attack, examples, seed=0):
    return [attack.run(e, i, seed) for i, e in enumerate(examples)]


def test_attack_flips_through_an_adversarial_neighbour_and_reports_it(trained):
    model, tok = trained
    examples = [
        Example("a good film", 1, id="x0"),
        Example("the bad film", 0, id="x1"),
        Example("a bad film", 1, id="x2"),
    ]
    records = attack_all(ascc(model, tok), examples)
    assert [r.index for r in records] == [0, 1, 2] and [r.id for r in records] == ["x0", "x1", "x2"]
    flipped, unmovable, wrong = records
    assert flipped.result == SUCCEEDED
    assert "good" in {s["original"] for s in flipped.swaps}  # the word the model reads had to move
    assert flipped.adversarial_pred == 0 and flipped.queries == 12  # clean + 10 hull steps + the discrete text
    assert unmovable.result == FAILED  # "bad" has no neighbours, "film" cannot flip it
    assert wrong.result == SKIPPED and wrong.adversarial == wrong.original
    summary = summarize(records)
    assert summary["accuracy_under_attack"] == pytest.approx(100 / 3)


def test_records_change_only_candidate_words_and_are_seeded(trained):
    model, tok = trained
    examples = [Example("The good man saw a good film .", 1), Example("a film , a man , a good day", 1)]
    runs = [attack_all(ascc(model, tok), examples, seed=3)]
    again = [ascc(model, tok).run(e, i, 3) for i, e in reversed(list(enumerate(examples)))]
    assert [r.adversarial for r in again[::-1]] == [r.adversarial for r in runs[0]]  # order does not matter
    for r in runs[0]:
        words, adv_words = split_words(r.original)[0], split_words(r.adversarial)[0]
        assert len(words) == len(adv_words) == r.num_words
        for i, (a, b) in enumerate(zip(words, adv_words, strict=True)):
            assert a == b or b.lower() in NEIGHBORS[a.lower()]
            assert (a != b) == (i in {s["index"] for s in r.swaps})


def test_pairs_keep_the_premise(trained):
    model, tok = trained
    model3, _ = tiny_bert(3, seed=1)
    examples = [Example("a good man", 0, "a good film"), Example("the film", 2, "the man is good")]
    records = attack_all(ascc(model3, tok, "snli"), examples)
    for r, e in zip(records, examples, strict=True):
        assert r.perturbed_field == "text_b" and r.context == e.text_a and r.original == e.text_b


def test_build_attack_makes_the_recipe_and_refuses_a_budget(trained):
    model, tok = trained
    attack = build_attack("ascc", Victim(model, tok, "sst2"))
    assert attack.field == "text_a" and attack.config()["hull"]["steps"] == 10
    assert "counterfitted_neighbors" in attack.resources()
    with pytest.raises(Exception, match="no query budget"):
        build_attack("ascc", Victim(model, tok, "sst2"), overrides={"query_budget": 5})


def test_streams_through_the_runner_and_resumes(trained, tmp_path):
    model, tok = trained
    examples = [
        Example("a good film", 1, id="x0"),
        Example("the bad film", 0, id="x1"),
        Example("a good man", 1, id="x2"),
    ]
    cfg = AttackConfig(model="tiny", recipe="ascc", n=3)

    def attack_into(folder, resume=False, first=None):
        with runs.open_run(folder, cfg, {}, resume=resume) as run:
            return run_attack(ascc(model, tok), examples, run, progress=False, first=first)

    full, _ = attack_into(tmp_path / "full")
    attack_into(tmp_path / "part", first=1)
    assert len(runs.load_records(tmp_path / "part" / "examples.jsonl")) == 1
    resumed, summary = attack_into(tmp_path / "part", resume=True)
    strip = lambda rs: [{**r.__dict__, "seconds": 0} for r in rs]
    assert strip(resumed) == strip(full) and summary["num_examples"] == 3
