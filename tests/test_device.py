"""Every model input follows the model's device. The model sits on the `meta` device (no GPU needed): a
forward pre-hook records the device of every tensor it is given, then stops the call. An input built on the CPU
and never moved (the fault that made every genetic example an error on a GPU) shows up as a 'cpu' entry."""

import pytest
import torch

from robustft.data.example import Example
from robustft.models import mlm
from robustft.models.factory import tiny_bert, tiny_bert_mlm
from robustft.models.predict import class_probs
from robustft.models.probe import ProbePair, probe


class Stop(Exception):
    pass


def devices_seen(module: torch.nn.Module, call) -> set[str]:
    """The devices of the tensors `module` received during `call()` (which is stopped at that forward)."""
    seen = set()

    def hook(_, args, kwargs):
        tensors = [t for t in (*args, *kwargs.values()) if torch.is_tensor(t)]
        seen.update(t.device.type for t in tensors)
        raise Stop

    handle = module.register_forward_pre_hook(hook, with_kwargs=True)
    try:
        with pytest.raises(Stop):
            call()
    finally:
        handle.remove()
    return seen


@pytest.fixture(scope="module")
def classifier():
    model, tok = tiny_bert(seed=0)
    return model.to("meta"), tok


def test_predictions_send_inputs_to_the_model_device(classifier):
    model, tok = classifier
    examples = [Example(id="0", text_a="a fine film", label=1), Example(id="1", text_a="dull", label=0)]
    assert devices_seen(model, lambda: class_probs(model, tok, examples, precision="fp32")) == {"meta"}


@pytest.mark.parametrize("noise", [0.0, 0.05])
def test_the_probe_sends_inputs_to_the_model_device(classifier, noise):
    model, tok = classifier
    pairs = [ProbePair("a fine film", "a good film")]
    assert devices_seen(model, lambda: probe(model, tok, pairs, noise_std=noise)) == {"meta"}


def test_the_masked_lm_sends_inputs_to_its_own_device():
    model, tok = tiny_bert_mlm(seed=0)
    model.to("meta")
    seen = devices_seen(model.base_model, lambda: mlm.pseudo_log_likelihood(model, tok, ["the movie was fun"]))
    assert seen == {"meta"}


def test_the_check_sees_an_input_left_on_the_cpu(classifier):
    model, _ = classifier
    ids = torch.ones(1, 3, dtype=torch.long)
    assert devices_seen(model, lambda: model(input_ids=ids)) == {"cpu"}
