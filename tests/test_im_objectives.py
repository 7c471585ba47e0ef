"""IM-BERT is an architecture, not a method: every training objective runs on an IM model."""

import pytest
import torch

from robustft.data.batching import collate, encode
from robustft.data.example import Example
from robustft.data.tasks import get_task
from robustft.models.factory import tiny_bert
from robustft.models.im import convert, im_stats
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
    assert im_stats(model)["layer 1"]["forwards"] >= 1
