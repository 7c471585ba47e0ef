"""Several examples attacked at once share every model call (lockstep.py, runner's `concurrent`): the same records
as one at a time, fewer and bigger model calls, per-example budgets and precisions, errors kept per example."""

import json
import threading
import time

import pytest

from attack_helpers import GOOD, KeywordModel
from robustft import runs
from robustft.attacks.example_loop import run_attack
from robustft.attacks.lockstep import Lockstep
from robustft.attacks.recipes import build_attack
from robustft.attacks.results import ERROR
from robustft.attacks.victim import Victim
from robustft.config import AttackConfig
from robustft.data.example import Example
from robustft.errors import MissingResource
from robustft.models.factory import tiny_bert

EXAMPLES = GOOD + [
    Example("good acting , great music , nice pace .", 1, id="g4"),
    Example("a great cast in a fine , good film", 1, id="g5"),
    Example("poor jokes and a bad , awful script", 0, id="b2"),
    Example("nice , but the ending is poor", 1, id="g6"),
    Example("the good old days", 1, id="g7"),
]


@pytest.fixture(scope="module")
def tok():
    return tiny_bert(num_labels=2, seed=0)[1]


def attack_all(tmp_path, tok, concurrent, model=None, recipe="textfooler", keep_seconds=False, **overrides):
    model = model or KeywordModel(tok)
    victim = Victim(model, tok, "sst2", precision=overrides.pop("precision", "fp32"))
    attack = build_attack(recipe, victim, overrides={"similarity": None, **overrides})
    cfg = AttackConfig(model="keyword", recipe=recipe, n=len(EXAMPLES))
    folder = tmp_path / f"{recipe}-{concurrent}-{len(list(tmp_path.iterdir()))}"
    with runs.open_run(folder, cfg, {"examples": "fixed"}) as run:
        records, _ = run_attack(attack, EXAMPLES, run, progress=False, concurrent=concurrent)
    on_disk = [json.loads(line)["index"] for line in (folder / "examples.jsonl").read_text().splitlines()]
    if all(r.result != ERROR for r in records):  # a complete run: finished out of order, listed in index order
        assert on_disk == sorted(on_disk)
    return [{**r.__dict__, "seconds": r.seconds if keep_seconds else 0} for r in records], model


def test_concurrent_examples_give_the_records_of_one_at_a_time_with_fewer_model_calls(tmp_path, tok):
    serial, one = attack_all(tmp_path, tok, 1)
    shared, many = attack_all(tmp_path, tok, 4)
    assert shared == serial
    assert sum(r["result"] == "succeeded" for r in serial) >= 5
    assert many.calls < one.calls  # the same rows in fewer, bigger batches


def test_seconds_per_example_share_the_wall_time_among_the_examples_in_flight(tmp_path, tok):
    start = time.perf_counter()
    shared, _ = attack_all(tmp_path, tok, 4, keep_seconds=True)
    wall = time.perf_counter() - start
    seconds = [r["seconds"] for r in shared]
    assert all(s > 0 for s in seconds)
    assert sum(seconds) <= wall  # not each example's whole time in flight (4 at once would sum to about 4x)


def test_each_example_keeps_its_own_query_budget_when_calls_are_shared(tmp_path, tok):
    serial, _ = attack_all(tmp_path, tok, 1, query_budget=6)
    shared, _ = attack_all(tmp_path, tok, 3, query_budget=6)
    assert shared == serial
    assert all(r["queries"] <= 6 for r in shared)
    assert any("query budget exhausted" in r["reason"] for r in shared)


def test_the_genetic_search_shares_calls_and_keeps_its_state_per_example(tmp_path, tok):
    args = {"recipe": "genetic", "lm_scorer": None, "neighbours": "wordnet", "population": 6, "generations": 3}
    serial, one = attack_all(tmp_path, tok, 1, **args)
    shared, many = attack_all(tmp_path, tok, 4, **args)
    assert shared == serial and many.calls < one.calls  # shared by default, each example keeps its own state


class Bf16FlipOnNice(KeywordModel):
    """Under autocast, answers the opposite for texts without "nice": bf16 successes that fp32 rejects, so some
    examples are attacked again in fp32 while the others go on in bf16."""

    def forward(self, input_ids, attention_mask=None, token_type_ids=None):
        import torch

        out = super().forward(input_ids, attention_mask, token_type_ids)
        if torch.is_autocast_cpu_enabled():
            no_nice = ~(input_ids == self.nice).any(-1)
            out.logits = torch.where(no_nice[:, None], out.logits.flip(-1), out.logits)
        return out


def test_a_thread_attacking_again_in_fp32_leaves_the_others_in_bf16(tmp_path, tok):
    def model():
        m = Bf16FlipOnNice(tok)
        m.nice = tok.get_vocab()["nice"]
        return m

    serial, _ = attack_all(tmp_path, tok, 1, model=model(), precision="bf16")
    shared, _ = attack_all(tmp_path, tok, 4, model=model(), precision="bf16")
    assert shared == serial
    again = [r for r in shared if "attacked again in fp32" in r["reason"]]
    assert again and len(again) < len(shared)


class FailsOn(KeywordModel):
    def __init__(self, tok, word, error):
        super().__init__(tok)
        self.word, self.error = tok.get_vocab()[word], error

    def forward(self, input_ids, attention_mask=None, token_type_ids=None):
        if (input_ids == self.word).any() and self.calls > 0:
            raise self.error
        return super().forward(input_ids, attention_mask, token_type_ids)


def test_an_error_in_a_shared_call_is_recorded_for_the_examples_in_that_call_and_the_run_goes_on(tmp_path, tok):
    records, _ = attack_all(tmp_path, tok, 3, model=FailsOn(tok, "music", RuntimeError("boom")))
    errors = [r for r in records if r["result"] == ERROR]
    assert any(r["id"] == "g4" for r in errors) and "boom" in errors[0]["reason"]
    assert len(errors) < len(records) and len(records) == len(EXAMPLES)


def test_an_error_that_stops_a_run_stops_every_thread_and_is_raised(tmp_path, tok):
    with pytest.raises(MissingResource, match="no such file"):
        attack_all(tmp_path, tok, 3, model=FailsOn(tok, "music", MissingResource("no such file")))


def test_lockstep_answers_once_every_member_has_asked_in_the_order_of_their_examples_one_member_at_a_time():
    calls, server, running, overlaps = [], threading.get_ident(), [], []

    def answer(payloads):
        assert threading.get_ident() == server  # the model always runs in the serving thread
        calls.append(list(payloads))
        if "fail" in payloads:
            raise ValueError("bad request")
        return [p * 2 for p in payloads]

    gate = Lockstep(answer, members=3)
    results, errors = {}, {}

    def member(order, asks):
        try:
            with gate.member():
                for a in asks:
                    running.append(order)  # between calls, no other member may run
                    time.sleep(0.01)
                    overlaps.append(len(running) > 1)
                    running.remove(order)
                    results.setdefault(order, []).append(gate.ask(order, a))
        except ValueError as exc:
            errors[order] = str(exc)

    plans = {2: [1, 2, 3], 0: [10], 1: [20, "fail", 30]}
    threads = [threading.Thread(target=member, args=(o, plans[o])) for o in (2, 0, 1)]
    for t in threads:
        t.start()
    gate.serve()  # returns once every member has left
    for t in threads:
        t.join(10)
    assert calls[0] == [10, 20, 1]  # every member's first request, ordered by example
    assert calls[1] == ["fail", 2]  # member 0 left after its one request: not waited for
    assert results == {0: [20], 1: [40], 2: [2]}
    assert errors == {1: "bad request", 2: "bad request"}  # every request of the failed call gets its error
    assert len(calls) == 2 and not any(overlaps)


def test_lexical_resources_that_are_not_thread_safe_are_used_by_one_thread_at_a_time(tmp_path, tok):
    # NLTK's WordNet reader seeks and reads one shared file handle: two threads reading at once get each other's
    # lines (seen as WordNetError records with 16 examples in flight before members took turns)
    args = {"recipe": "pwws", "neighbours": "wordnet"}
    serial, _ = attack_all(tmp_path, tok, 1, **args)
    from robustft import resources

    resources.wordnet()._synset_offset_cache.clear()  # cold: every look-up reads the data files again
    shared, _ = attack_all(tmp_path, tok, 8, **args)
    assert not [r for r in shared if r["result"] == ERROR]
    assert shared == serial
