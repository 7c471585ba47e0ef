"""A2T against TextAttack's recipe and Trainer: how adversarial rows are collected and weighed (hand-computed
losses), its stopword list (NLTK's English list, read by nltk itself) and the swap it keeps at a flip."""

import math
import os

import pytest
import torch
from torch import nn

from robustft import resources
from robustft.config import TrainConfig
from robustft.data.batching import collate, encode
from robustft.data.example import Example
from robustft.data.tasks import get_task
from robustft.defenses.a2t import A2T, A2TSettings, Outcome
from robustft.errors import ConfigError
from robustft.models.factory import tiny_bert
from robustft.training.objectives import build_objective, check_method_args

SST2 = get_task("sst2")


class FirstTokenModel(nn.Module):
    """Two-class logits [0, c] with c = first token id / 10: each row's CE is known by hand."""

    def __init__(self):
        super().__init__()
        self.unused = nn.Parameter(torch.zeros(()))

    def forward(self, input_ids, attention_mask=None, token_type_ids=None):
        c = input_ids[:, 0].float() / 10 + 0 * self.unused
        return type("Out", (), {"logits": torch.stack([torch.zeros_like(c), c], -1)})()


def ce(first_id: int, label: int) -> float:
    """Cross-entropy of logits [0, c], c = first_id / 10, by hand."""
    c = first_id / 10
    return math.log(1 + math.exp(c)) - (c if label == 1 else 0.0)


class StubAttack:
    """Succeeds on the rows whose first token is in `wins`; the adversarial row's first token is the clean one + 10.
    Records the first tokens of every row it was asked to attack, call by call."""

    def __init__(self, wins):
        self.wins, self.calls = set(wins), []

    def __call__(self, model, part):
        firsts = part["input_ids"][:, 0].tolist()
        self.calls.append(firsts)
        ids = part["input_ids"].clone()
        ids[:, 0] += 10
        return Outcome(ids, torch.tensor([f in self.wins for f in firsts]), [1] * len(firsts))


FIRSTS, LABELS = [1, 2, 3, 4, 5], [1, 0, 1, 0, 1]


def batch():
    ids = torch.tensor([[f, 7, 8] for f in FIRSTS])
    return {
        "input_ids": ids,
        "attention_mask": torch.ones_like(ids),
        "labels": torch.tensor(LABELS),
        "examples": [Example(f"row {f}", y) for f, y in zip(FIRSTS, LABELS, strict=True)],
    }


def unused_encoder(texts):
    raise AssertionError("the stub attack compares no sentences")


def objective(wins, **args):
    obj = build_objective("a2t", {"clean_epochs": 0, "im_adversary_grad": "model", **args})
    obj.defense = A2T(obj.settings, tiny_bert(2, seed=0)[1], SST2, {}, unused_encoder)
    obj.defense.attack = StubAttack(wins)
    return obj


def clean_sum() -> float:
    return sum(ce(f, y) for f, y in zip(FIRSTS, LABELS, strict=True))


def test_textattack_mix_is_the_mean_over_clean_and_collected_rows_at_equal_weight():
    # share 0.4 of 5 rows: ceil(2.0) = 2 successes wanted; only rows 2 and 4 can succeed, so both are collected
    obj = objective({2, 4}, share=0.4, alpha=1.0)
    loss, logs = obj.loss(FirstTokenModel(), batch())
    expected = (clean_sum() + ce(12, 0) + ce(14, 0)) / 7
    assert loss.item() == pytest.approx(expected, rel=1e-6)
    assert logs["adv_rows"] == 2
    attacked = [f for call in obj.defense.attack.calls for f in call]
    assert sorted(attacked) == sorted(set(attacked))  # no row attacked twice
    assert all(len(call) <= 2 for call in obj.defense.attack.calls)  # each round asks for no more than it still needs


def test_textattack_mix_weighs_adversarial_rows_by_alpha_inside_the_mean():
    obj = objective({2, 4}, share=0.4, alpha=0.5)
    loss, _ = obj.loss(FirstTokenModel(), batch())
    assert loss.item() == pytest.approx((clean_sum() + 0.5 * (ce(12, 0) + ce(14, 0))) / 7, rel=1e-6)


def test_textattack_mix_stops_at_the_wanted_number_of_successes():
    # every row can succeed; ceil(0.2 * 5) = 1 wanted: one row attacked, one adversarial row in the mean
    obj = objective(set(FIRSTS), share=0.2)
    loss, logs = obj.loss(FirstTokenModel(), batch())
    (attacked,) = obj.defense.attack.calls
    (first,) = attacked
    label = LABELS[FIRSTS.index(first)]
    assert loss.item() == pytest.approx((clean_sum() + ce(first + 10, label)) / 6, rel=1e-6)
    assert logs["adv_rows"] == 1


def test_textattack_mix_attacks_on_until_a_success_and_tries_each_row_once():
    torch.manual_seed(3)
    obj = objective({5}, share=0.2)  # one success wanted, only row 5 can give it
    loss, logs = obj.loss(FirstTokenModel(), batch())
    calls = obj.defense.attack.calls
    attacked = [f for call in calls for f in call]
    assert attacked[-1] == 5 and len(attacked) == len(set(attacked)) and all(len(c) == 1 for c in calls)
    assert loss.item() == pytest.approx((clean_sum() + ce(15, 1)) / 6, rel=1e-6)


def test_textattack_mix_without_a_success_is_the_clean_mean():
    obj = objective(set(), share=0.4)
    loss, logs = obj.loss(FirstTokenModel(), batch())
    assert loss.item() == pytest.approx(clean_sum() / 5, rel=1e-6)
    assert sorted(f for call in obj.defense.attack.calls for f in call) == FIRSTS  # every row tried once
    assert logs["adv_rows"] == 0


def test_batch_means_mix_is_the_clean_mean_plus_alpha_times_the_adversarial_mean():
    obj = objective({2, 4}, share=1.0, alpha=0.5, mix="batch-means")
    loss, _ = obj.loss(FirstTokenModel(), batch())
    assert loss.item() == pytest.approx(clean_sum() / 5 + 0.5 * (ce(12, 0) + ce(14, 0)) / 2, rel=1e-6)
    assert [sorted(call) for call in obj.defense.attack.calls] == [FIRSTS]  # one round: the attacked share, all at once


def test_mix_is_checked_and_recorded():
    with pytest.raises(ConfigError, match=r"method_args\.mix: expected one of textattack, batch-means, got 'equal'"):
        build_objective("a2t", {"mix": "equal"})
    with pytest.raises(ConfigError, match=r"method_args\.mix"):
        check_method_args("a2t", {"mix": 1})
    assert build_objective("a2t").settings.mix == "textattack"
    cls = type(build_objective("a2t"))
    assert cls.preset("sst2")["method_args"]["mix"] == "textattack"
    batch_means = TrainConfig(method="a2t", method_args={"mix": "batch-means"})
    assert len(cls.deviations(batch_means)) == len(cls.deviations(TrainConfig(method="a2t"))) + 1


def test_a2t_freezes_exactly_nltks_english_stopwords(tiny_tok):
    nltk = pytest.importorskip("nltk")
    nltk.data.path.insert(0, os.environ.get("NLTK_DATA") or str(resources.data_root() / "nltk_data"))
    from nltk.corpus import stopwords

    attack = A2T(A2TSettings(similarity=0.0), tiny_tok, SST2, {})
    assert attack.stopwords == frozenset(stopwords.words("english"))
    assert len(attack.stopwords) == 179 and "the" in attack.stopwords and "above" in attack.stopwords
    assert "however" not in attack.stopwords  # in TextFooler's 266, not in NLTK's


@pytest.fixture(scope="module")
def tiny_tok():
    return tiny_bert(2, seed=0)[1]


def trained_tiny():
    model, tok = tiny_bert(2, seed=0, initializer_range=0.2)
    cues = ((1, ["good", "great"]), (0, ["bad", "awful"]))
    examples = [Example(f"the film was {w}", y) for y, ws in cues for w in ws]
    data = collate(encode(tok, examples, 32), tok.pad_token_id)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(40):
        optimizer.zero_grad()
        inputs = {k: data[k] for k in ("input_ids", "attention_mask", "token_type_ids") if k in data}
        nn.functional.cross_entropy(model(**inputs).logits, data["labels"]).backward()
        optimizer.step()
    return model.eval(), tok


@pytest.mark.parametrize("favour", ["bad", "awful"])
def test_at_a_flip_the_most_similar_success_is_kept(favour):
    """TextAttack's GreedyWordSwapWIR: among the leading successes the most similar one, not the best-scoring."""
    model, tok = trained_tiny()
    texts = ["the film was bad", "the film was awful"]
    with torch.no_grad():
        enc = tok(texts, return_tensors="pt", padding=True)
        probs = model(**enc).logits.softmax(-1)
    assert (probs.argmax(-1) == 0).all()  # both swaps of "good" flip the positive row

    def encoder(batch_texts):  # cosine 0.99 to the original for the favoured swap, 0.95 for the other
        def vec(t):
            angle = {f"the film was {favour}": math.acos(0.99)}.get(t, 0.0 if t.endswith("good") else math.acos(0.95))
            return torch.tensor([math.cos(angle), math.sin(angle)])

        return torch.stack([vec(t) for t in batch_texts])

    examples = [Example("the film was good", 1)]
    data = collate(encode(tok, examples, 32), tok.pad_token_id)
    attack = A2T(A2TSettings(similarity=0.9), tok, SST2, {"good": ["bad", "awful"]}, encoder)
    outcome = attack.attack(model, data)
    assert outcome.success.tolist() == [True]
    assert tok.decode(outcome.input_ids[0], skip_special_tokens=True) == f"the film was {favour}"
