"""IM-BERT is an architecture, not a method: every training objective runs on an IM model."""

import pytest
import torch
import transformers

from im_helpers import tiny_mpnet_classifier
from robustft.data.batching import collate, encode
from robustft.data.example import Example
from robustft.data.tasks import get_task
from robustft.models.factory import load_tokenizer, tiny_bert
from robustft.models.im import convert, im_stats, settings_of
from robustft.training.objectives import OBJECTIVES, build_objective
from robustft.training.objectives.base import TrainContext

NEIGHBORS = {"film": ["movie", "picture"], "good": ["fine", "nice"], "bad": ["poor"]}
FAST_ARGS = {
    "rift": {"teacher": "copy", "steps": 2},
    "rift-imdb": {"teacher": "copy", "steps": 2},
    "rift-snli": {"teacher": "copy", "steps": 2},
    "ascc": {"steps": 2},
}


@pytest.mark.parametrize("grad", ["unrolled", "explicit"])
@pytest.mark.parametrize("method", sorted(OBJECTIVES))
def test_every_objective_trains_an_im_model(method, grad):
    torch.manual_seed(0)
    model, tok = tiny_bert(2, seed=0)
    convert(model, arch="im", layers="all", K=1, eta=0.05, grad=grad)
    assert_objective_trains(model, tok, method)


@pytest.mark.parametrize("arch", ["im", "ex"])
@pytest.mark.parametrize("method", sorted(OBJECTIVES))
def test_every_objective_trains_an_im_and_an_ex_mpnet(method, arch):
    model, tok = tiny_mpnet_classifier(seed=0)  # relative position bias, dropout on
    convert(model, arch=arch, layers="all", form="increment", K=2, solver="anderson")  # the default gradient
    assert_objective_trains(model, tok, method)


def assert_objective_trains(model, tok, method):
    """One loss and backward of `method` on a converted model: finite, with gradients, through the IM layers."""
    examples = [Example(t, y) for t, y in (("a good film", 1), ("a bad film", 0), ("good", 1), ("bad film", 0))]
    batch = collate(encode(tok, examples, 16), tok.pad_token_id)
    objective = build_objective(method, FAST_ARGS.get(method))
    objective.neighbors = NEIGHBORS
    objective.setup(model, TrainContext(tok, get_task("sst2"), "tiny"))
    model.train()
    loss, _ = objective.loss(model, batch)
    loss.backward()
    assert torch.isfinite(loss)
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    assert grads and all(torch.isfinite(g).all() for g in grads)
    solves = im_stats(model)["layer 1"]["forwards"]  # an EX layer takes the explicit step only: no solve to count
    assert solves >= 1 if settings_of(model).arch == "im" else solves == 0


def tiny_other_encoder(kind: str, tok):
    """A random 2-layer DistilBERT or DeBERTa-v2 over the MiniLM tokenizer's vocabulary: other layer calls (no token
    types; DeBERTa's relative attention), for "every method on any encoder"."""
    torch.manual_seed(0)
    common = dict(vocab_size=len(tok), pad_token_id=tok.pad_token_id, num_labels=2, max_position_embeddings=128)
    if kind == "distilbert":
        config = transformers.DistilBertConfig(dim=32, n_layers=2, n_heads=2, hidden_dim=64, **common)
        return transformers.DistilBertForSequenceClassification(config)
    config = transformers.DebertaV2Config(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, **common
    )
    return transformers.DebertaV2ForSequenceClassification(config)


@pytest.mark.parametrize("kind", ["distilbert", "deberta-v2"])
@pytest.mark.parametrize("method", sorted(OBJECTIVES))
def test_every_objective_trains_an_im_distilbert_and_deberta(method, kind):
    tok = load_tokenizer("minilm")
    model = tiny_other_encoder(kind, tok)
    convert(model, arch="im", layers="all", form="increment", K=2, solver="anderson")
    assert_objective_trains(model, tok, method)
