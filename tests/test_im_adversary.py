"""Gradient attacks and inner adversaries see an IM model's true (unrolled) gradient, not its cheap surrogate."""

import pytest
import torch

from robustft.adversary.candidates import CandidateBuilder
from robustft.adversary.embeds import forward_embeds, word_embeddings
from robustft.adversary.hull import HullSettings, ce_gain, kaiming_logits, kl_gain, optimise_weights
from robustft.data.batching import collate, encode
from robustft.data.example import Example
from robustft.data.tasks import get_task
from robustft.errors import ConfigError
from robustft.models.factory import tiny_bert
from robustft.models.im import convert, encoder_layers, exact_gradients, settings_of
from robustft.training.objectives import build_objective
from robustft.training.objectives.base import TrainContext

NEIGHBORS = {"good": ["great", "fine", "nice"], "movie": ["film", "picture"], "dull": ["boring", "flat"]}
# a setting where the surrogate is far from the exact gradient (cosine 0.53 here: benchmarks/im_overhead.py)
FAR = {"K": 5, "eta": 0.05}


def batch_of(tok):
    examples = [Example("a good movie", 1), Example("a dull movie", 0)]
    return collate(encode(tok, examples, 32), tok.pad_token_id)


def input_gradient(model, batch):
    embeds = word_embeddings(model, batch).detach().requires_grad_()
    loss = torch.nn.functional.cross_entropy(forward_embeds(model, batch, embeds), batch["labels"])
    (grad,) = torch.autograd.grad(loss, embeds)
    return grad


def test_exact_gradients_switches_every_im_layer_and_restores_it():
    model, tok = tiny_bert(seed=0, initializer_range=0.2)
    batch = batch_of(tok)
    convert(model, arch="im", layers="all", grad="unrolled", **FAR)
    exact = input_gradient(model, batch)
    convert(model, arch="im", layers="all", grad="explicit", **FAR)
    surrogate = input_gradient(model, batch)
    assert not torch.allclose(surrogate, exact, atol=1e-4)
    with exact_gradients(model) as switched:
        assert switched and all(layer.im_settings.grad == "unrolled" for layer in encoder_layers(model))
        assert torch.allclose(input_gradient(model, batch), exact, atol=1e-6)
        assert settings_of(model).grad == "explicit"  # the saved config is untouched
    assert all(layer.im_settings.grad == "explicit" for layer in encoder_layers(model))
    with pytest.raises(RuntimeError), exact_gradients(model):
        raise RuntimeError("the block failed")
    assert all(layer.im_settings.grad == "explicit" for layer in encoder_layers(model))
    for arch in ("plain", "ex"):
        convert(model, arch=arch, layers="all")
        with exact_gradients(model) as switched:
            assert switched is False


def _hull_weights(model, tok, **kwargs):
    batch = batch_of(tok)
    table = CandidateBuilder(tok, get_task("sst2"), NEIGHBORS).build(batch)
    init = kaiming_logits(tuple(table.slot_mask.shape), torch.Generator().manual_seed(0))
    return optimise_weights(model, batch, table, ce_gain(batch["labels"]), HullSettings(steps=3), init=init, **kwargs)


def test_white_box_hull_search_uses_exact_gradients_by_default():
    model, tok = tiny_bert(seed=0, initializer_range=0.2)
    convert(model, arch="im", layers="all", grad="unrolled", **FAR)
    reference = _hull_weights(model, tok)
    convert(model, arch="im", layers="all", grad="explicit", **FAR)
    assert torch.allclose(_hull_weights(model, tok), reference, atol=1e-5)
    assert not torch.allclose(_hull_weights(model, tok, im_gradients="model"), reference, atol=1e-3)
    with pytest.raises(ConfigError):
        _hull_weights(model, tok, im_gradients="surrogate")


@pytest.mark.parametrize("entropy_norm", [300 * 128, "tokens", "words"])
def test_hull_search_in_chunks_finds_the_whole_batch_weights(entropy_norm):
    """Chunks bound the memory of the exact IM gradient without changing the search (eval mode, per-example sum)."""
    model, tok = tiny_bert(seed=0, initializer_range=0.2)
    convert(model, arch="im", layers="all", grad="explicit", **FAR)
    examples = [Example("a good movie", 1), Example("a dull movie", 0), Example("good", 1), Example("dull film", 0)]
    batch = collate(encode(tok, examples, 32), tok.pad_token_id)
    table = CandidateBuilder(tok, get_task("sst2"), NEIGHBORS).build(batch)
    init = kaiming_logits(tuple(table.slot_mask.shape), torch.Generator().manual_seed(0))
    with torch.no_grad():
        target = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits

    def search(chunk):
        settings = HullSettings(steps=3, entropy_weight=50.0, entropy_norm=entropy_norm, chunk=chunk)
        return optimise_weights(model, batch, table, kl_gain(target), settings, init=init)

    whole = search(None)
    assert not torch.allclose(whole, torch.softmax(init.masked_fill(~table.slot_mask, -500.0), -1), atol=1e-3)
    for chunk in (1, 3, 4):
        assert torch.allclose(search(chunk), whole, atol=1e-4), chunk  # float rounding, through 3 Adam steps
    with pytest.raises(ConfigError, match="chunk"):
        HullSettings(chunk=0)
    assert [build_objective(m, {"hull_chunk": 24}).hull.chunk for m in ("rift-snli", "ascc")] == [24, 24]


A2T_ATTACKING = {"share": 1.0, "clean_epochs": 0, "min_words": 0, "max_rate": 1.0, "similarity": 0.0}
ADVERSARY_ARGS = {
    "rift": {"teacher": "copy", "steps": 1},
    "ascc": {"steps": 1},
    "dne": {"steps": 1},
    "a2t": A2T_ATTACKING,
}


@pytest.mark.parametrize("method", ["pgd", "trades", "freelb", "ascc", "rift", "infobert", "a2t", "dne"])
def test_inner_adversary_choice_is_explicit(method):
    """The training adversary ascends the exact gradient by default and the model's own with 'model'."""
    model, tok = tiny_bert(seed=0, initializer_range=0.2)
    convert(model, arch="im", layers="all", grad="explicit", **FAR)
    seen = []
    for layer in encoder_layers(model):
        original = type(layer)._solve

        def spy(self, *args, _original=original, **kwargs):
            seen.append(self.im_settings.grad)
            return _original(self, *args, **kwargs)

        layer._solve = spy.__get__(layer)
    for choice, expected in (("exact", "unrolled"), ("model", "explicit")):
        objective = build_objective(method, {**ADVERSARY_ARGS.get(method, {}), "im_adversary_grad": choice})
        objective.neighbors = NEIGHBORS
        objective.setup(model, TrainContext(tok, get_task("sst2"), "tiny"))
        seen.clear()
        model.train()
        objective.loss(model, batch_of(tok))
        assert expected in seen, (choice, seen)
        assert all(layer.im_settings.grad == "explicit" for layer in encoder_layers(model))
    with pytest.raises(ConfigError):
        build_objective(method, {"im_adversary_grad": "cheap"})
