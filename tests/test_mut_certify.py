"""Oracle tests for `robustft.evaluation.certify` (mutation testing, docs/testing.md): the Clopper-Pearson bound
against scipy's exact binomial interval and its closed forms, the records of a stub ensemble whose vote shares are
set by hand, and the summaries and log lines written out by hand."""

import dataclasses

import pytest
import torch
from scipy.stats import binomtest
from torch import nn
from transformers.modeling_outputs import SequenceClassifierOutput

from robustft.data.example import Example
from robustft.defenses.ranmask import DEFINITION as RANMASK_DEFINITION
from robustft.defenses.safer import DEFINITION as SAFER_DEFINITION
from robustft.evaluation import certify
from robustft.models.factory import tiny_bert


@pytest.mark.parametrize(("count", "n", "alpha"), [(1, 10, 0.05), (37, 40, 0.05), (5, 7, 0.1), (99, 100, 0.01)])
def test_lower_bound_is_the_exact_intervals_lower_end_at_twice_alpha(count, n, alpha):
    # a one-sided bound at 1 - alpha is the lower end of the two-sided exact interval at 1 - 2 alpha
    exact = binomtest(count, n).proportion_ci(confidence_level=1 - 2 * alpha, method="exact").low
    assert certify.lower_bound(count, n, alpha) == pytest.approx(exact, rel=1e-9)


def test_lower_bound_closed_forms():
    assert certify.lower_bound(10, 10, 0.05) == pytest.approx(0.05 ** (1 / 10))  # all n: alpha^(1/n)
    assert certify.lower_bound(1, 1, 0.2) == pytest.approx(0.2)
    assert certify.lower_bound(0, 10, 0.05) == 0.0 and isinstance(certify.lower_bound(3, 10, 0.05), float)


@dataclasses.dataclass(frozen=True)
class StubSettings:
    copies: int = 5
    vote: str = "logits"
    seed: int = 7


class StubDefense:
    def certificate(self, p, input_ids):
        return {"p_seen": p, "ids_seen": list(input_ids)}


class StubEnsemble(nn.Module):
    """Vote shares set by hand, per example picked by its number of real tokens; records `with_settings`."""

    def __init__(self, shares_by_length, settings=StubSettings(), calls=None):
        super().__init__()
        self.shares_by_length, self.settings, self.calls = shares_by_length, settings, calls if calls else []
        self.config = type("Config", (), {"num_labels": 3})()
        self.defense = StubDefense()

    def with_settings(self, **changes):
        self.calls.append(changes)
        return StubEnsemble(self.shares_by_length, dataclasses.replace(self.settings, **changes), self.calls)

    def forward(self, input_ids, attention_mask, token_type_ids=None):
        rows = [self.shares_by_length[int(n)] for n in attention_mask.sum(1)]
        return SequenceClassifierOutput(logits=torch.tensor(rows).clamp_min(1e-12).log())


def test_records_count_the_true_labels_votes_and_bound_them_with_the_counting_copies():
    _, tok = tiny_bert(3, seed=0)
    examples = [Example("good", 1), Example("a bad film", 2), Example("the film", 0)]
    lengths = [len(tok(e.text_a)["input_ids"]) for e in examples]
    assert len(set(lengths)) == 3
    # 40 copies: votes by hand [2, 30, 8], [1, 4, 35], [20, 20, 0]
    shares = dict(zip(lengths, [[2 / 40, 30 / 40, 8 / 40], [1 / 40, 4 / 40, 35 / 40], [0.5, 0.5, 0.0]], strict=True))
    model = StubEnsemble(shares)
    records = certify.certify_records(model, tok, examples, samples=40, alpha=0.05)
    assert model.calls == [{"copies": 40, "vote": "votes", "seed": 8}]  # the certificate's own copies and seed
    assert [r["votes"] for r in records] == [30, 35, 20]
    assert [r["vote_prediction"] for r in records] == [1, 2, 0]  # a tie goes to the first label, argmax's
    assert [r["vote_correct"] for r in records] == [True, True, True]
    for r, votes in zip(records, [30, 35, 20], strict=True):
        exact = binomtest(votes, 40).proportion_ci(confidence_level=0.9, method="exact").low
        assert r["p_lower"] == round(exact, 6) and r["p_seen"] == pytest.approx(exact, rel=1e-9)
    assert records[0]["ids_seen"] == tok("good")["input_ids"]
    assert set(records[0]) == {"votes", "p_lower", "vote_prediction", "vote_correct", "p_seen", "ids_seen"}


def test_a_wrong_vote_prediction_is_recorded_as_wrong():
    _, tok = tiny_bert(3, seed=0)
    length = len(tok("good")["input_ids"])
    records = certify.certify_records(StubEnsemble({length: [0.1, 0.6, 0.3]}), tok, [Example("good", 2)], 10, 0.05)
    assert records[0]["votes"] == 3 and records[0]["vote_prediction"] == 1 and records[0]["vote_correct"] is False


def test_safer_summary_by_hand():
    certs = [{"certified": c, "vote_correct": v} for c, v in [(True, True), (False, True), (False, False)]]
    records = [{"index": i, "certify": c} for i, c in reversed(list(enumerate(certs)))]
    setting = {"defense": "safer", "samples": 50, "confidence": 0.9}
    summary = certify.certified_summary(records, setting)
    assert summary["definition"] == SAFER_DEFINITION and summary["n"] == 3 and summary["samples"] == 50
    assert summary["accuracy"]["accuracy"] == pytest.approx(1 / 3) and summary["accuracy"]["correct"] == 1
    assert summary["vote_accuracy"]["correct"] == 2 and summary["vote_accuracy"]["n"] == 3
    assert summary["vote_accuracy_definition"] == certify.VOTE_ACCURACY


def test_certificates_written_before_the_vote_record_get_no_vote_accuracy():
    records = [
        {"index": 0, "certify": {"certified": True}},
        {"index": 1, "certify": {"certified": True, "vote_correct": 1}},
    ]
    summary = certify.certified_summary(records, {"defense": "safer", "samples": 5, "confidence": 0.95})
    assert "vote_accuracy" not in summary and "vote_accuracy_definition" not in summary
    assert summary["accuracy"]["accuracy"] == 1.0


def test_ranmask_summary_keeps_its_definition():
    records = [{"index": 0, "certify": {"radius": 3, "vote_correct": True}}]
    summary = certify.certified_summary(records, {"defense": "ranmask", "samples": 5, "confidence": 0.95})
    assert summary["definition"] == RANMASK_DEFINITION and summary["mean_radius"] == 3


def test_describe_writes_each_figure_with_its_interval_by_hand():
    figure = {"accuracy": 0.5, "n": 4, "ci95": [0.15, 0.85]}
    safer = {"defense": "safer", "samples": 100, "confidence": 0.95, "accuracy": figure}
    assert certify.describe(safer) == [
        "certified accuracy (safer, 100 copies, confidence 0.95): 0.5000 (95% interval [0.1500, 0.8500], n=4)"
    ]
    votes = {"accuracy": 0.75, "n": 4, "ci95": [0.3, 0.95]}
    ranmask = {"defense": "ranmask", "samples": 40, "confidence": 0.9, "vote_accuracy": votes}
    ranmask["accuracy_by_changed_words"] = {"1": figure, "2": {"accuracy": 0.25, "n": 4, "ci95": [0.05, 0.7]}}
    assert certify.describe(ranmask) == [
        "certified accuracy (ranmask, 40 copies, confidence 0.9), 1 word(s) changed: "
        "0.5000 (95% interval [0.1500, 0.8500], n=4)",
        "certified accuracy (ranmask, 40 copies, confidence 0.9), 2 word(s) changed: "
        "0.2500 (95% interval [0.0500, 0.7000], n=4)",
        "clean accuracy of the certified classifier: the majority vote over the certificate's copies: "
        "0.7500 (95% interval [0.3000, 0.9500], n=4)",
    ]


def test_prediction_settings_reach_both_the_votes_and_the_certified_tokens():
    _, tok = tiny_bert(3, seed=0)
    examples = [Example("a rather long and winding film", 2)]
    # truncated to 4 tokens: [CLS] a rather [SEP]; the stub knows only that length
    records = certify.certify_records(StubEnsemble({4: [0.0, 0.25, 0.75]}), tok, examples, 8, 0.05, max_length=4)
    assert records[0]["votes"] == 6 and records[0]["ids_seen"] == tok("a rather")["input_ids"]


def test_without_prediction_settings_a_long_text_is_cut_at_128_tokens_for_both():
    _, tok = tiny_bert(3, seed=0)
    long = Example(" ".join(["film"] * 140), 1)
    records = certify.certify_records(StubEnsemble({128: [0.0, 1.0, 0.0]}), tok, [long], 4, 0.05)
    assert records[0]["votes"] == 4 and records[0]["vote_prediction"] == 1
    assert records[0]["ids_seen"] == tok(" ".join(["film"] * 126))["input_ids"]  # [CLS] 126 words [SEP]
