"""Every model input of the attack engine follows its model's device (issue: on a GPU machine the
genetic attack's LM filter built its inputs on the CPU while the masked LM sat on cuda).

The probes hold their one parameter on the `meta` device and assert that every tensor they are fed is
there too; a CPU-only machine can still tell a caller that moves its inputs from one that does not.
Each probe is moved to `meta` *after* its wrapper was built, as a command does when it moves a model.
"""

from types import SimpleNamespace

import pytest
import torch

from robustft.attacks.constraints.lm_filter import LanguageModelFilter, MaskedLMPseudoLogLikelihood
from robustft.attacks.transformations import MaskedLMCandidates
from robustft.attacks.victim import Victim
from robustft.attacks.words import AttackedText
from robustft.data.example import Example
from robustft.models.factory import tiny_bert


class InputsReachedModel(Exception):
    pass


class DeviceProbe(torch.nn.Module):
    """Asserts every tensor input is on its parameter's device; then answers with zero logits (shaped from
    the inputs, on the CPU) or, with `stop=True`, raises InputsReachedModel."""

    def __init__(self, width: int, stop: bool = False):
        super().__init__()
        self.anchor = torch.nn.Parameter(torch.zeros(1))
        self.width, self.stop, self.calls = width, stop, 0
        self.config = SimpleNamespace(max_position_embeddings=512, num_labels=width, name_or_path="probe")

    def forward(self, input_ids, attention_mask=None, token_type_ids=None):
        for t in (input_ids, attention_mask, token_type_ids):
            assert t is None or t.device == self.anchor.device, f"input on {t.device}, model on {self.anchor.device}"
        self.calls += 1
        if self.stop:
            raise InputsReachedModel
        shape = (input_ids.shape[0], self.width) if self.width == 2 else (*input_ids.shape, self.width)
        return SimpleNamespace(logits=torch.zeros(shape))


@pytest.fixture(scope="module")
def tok():
    return tiny_bert()[1]


def test_victim_feeds_the_model_where_it_is_now(tok):
    probe = DeviceProbe(2)
    victim = Victim(probe, tok, "rte")
    probe.to("meta")
    out = victim.probs([Example("a man sleeps", 0, "a person rests"), Example("one more", 1, "pair")])
    assert out.shape == (2, 2) and probe.calls == 1


def test_masked_lm_candidates_follow_the_masked_lm(tok):
    probe = DeviceProbe(len(tok))
    candidates = MaskedLMCandidates(probe, tok, max_candidates=5)
    probe.to("meta")
    text = AttackedText("the film was good")
    assert set(candidates.candidates(text, [3])) == {3} and probe.calls == 1


def test_lm_filter_scores_on_the_masked_lm_device(tok):
    probe = DeviceProbe(len(tok), stop=True)
    lm_filter = LanguageModelFilter(MaskedLMPseudoLogLikelihood(probe, tok), window=2, max_drop=5.0)
    probe.to("meta")
    text = AttackedText("the film was good")
    with pytest.raises(InputsReachedModel):  # not an AssertionError: the inputs were on meta
        lm_filter.filter([text.replace_word(3, "fine")], text, text)
