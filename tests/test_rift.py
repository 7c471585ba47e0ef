"""RIFT: the class-conditional InfoNCE, the frozen teacher and the presets (LR warm-up: test_optim.py)."""

import pytest
import torch

from robustft.data.batching import collate, encode
from robustft.data.example import Example
from robustft.data.tasks import get_task
from robustft.models.factory import tiny_bert
from robustft.training.objectives import build_objective
from robustft.training.objectives.base import TrainContext
from robustft.training.objectives.rift import info_nce, projection_head

NEIGHBORS = {"good": ["great", "fine"], "bad": ["awful", "poor"], "film": ["movie"]}


def rift(model, tok, **args):
    objective = build_objective("rift", {"teacher": "copy", "steps": 2, **args})
    objective.neighbors = NEIGHBORS
    objective.setup(model, TrainContext(tok, get_task("sst2"), "tiny"))
    return objective


def batch_of(tok):
    examples = [Example("a good film", 1), Example("a bad film", 0), Example("good", 1), Example("bad film", 0)]
    return collate(encode(tok, examples, 16), tok.pad_token_id)


def test_infonce_falls_on_a_batch_it_can_fit():
    torch.manual_seed(0)
    students, teachers = torch.randn(16, 32), torch.randn(16, 32)
    heads = torch.nn.ModuleList([projection_head(32), projection_head(32)])
    optimizer = torch.optim.Adam(heads.parameters(), lr=1e-3)
    losses = []
    for _ in range(60):
        loss = info_nce(heads[0](students), heads[1](teachers), tau=0.2)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[0] > 2.0  # about log(16) at the start
    assert losses[-1] < 0.2 * losses[0]


def test_negatives_come_only_from_the_same_class():
    model, tok = tiny_bert(2, seed=0)
    objective = rift(model, tok)
    torch.manual_seed(0)
    s, t = torch.randn(6, 64), torch.randn(6, 64)
    labels = torch.tensor([0, 1, 0, 1, 1, 0])
    got = objective.mutual_information_loss(s, t, labels)
    per_class = []
    for c in (0, 1):
        rows = labels == c
        heads = objective.heads["student"][c], objective.heads["teacher"][c]
        per_class.append(info_nce(heads[0](s[rows]), heads[1](t[rows]), 0.2))
    assert torch.allclose(got, torch.stack(per_class).mean())
    # moving the features of class 1 leaves class 0's term untouched
    s2 = s.clone()
    s2[labels == 1] += 5.0
    rows = labels == 0
    again = info_nce(objective.heads["student"][0](s2[rows]), objective.heads["teacher"][0](t[rows]), 0.2)
    assert torch.allclose(again, per_class[0])
    # unconditional MI: one head pair, negatives from the whole batch
    flat = rift(model, tok, conditional_mi=False)
    assert len(flat.heads["student"]) == 1
    assert torch.allclose(
        flat.mutual_information_loss(s, t, labels),
        info_nce(flat.heads["student"][0](s), flat.heads["teacher"][0](t), 0.2),
    )


def test_teacher_is_frozen_and_kept_out_of_the_trainable_modules():
    model, tok = tiny_bert(2, seed=0)
    objective = rift(model, tok, l2_pretrained=1.0)
    before = {n: p.clone() for n, p in objective.teacher.named_parameters()}
    assert objective.teacher_bytes == sum(p.numel() * 4 for p in before.values())
    assert all(not p.requires_grad for p in objective.teacher.parameters())
    trainable = {id(p) for m in objective.modules().values() for p in m.parameters()}
    assert not trainable & {id(p) for p in objective.teacher.parameters()}
    params = list(model.parameters()) + [p for m in objective.modules().values() for p in m.parameters()]
    optimizer = torch.optim.SGD(params, lr=0.1)
    batch = batch_of(tok)
    model.train()
    loss, logs = objective.loss(model, batch)
    assert logs["l2_pretrained"] == 0.0  # the student starts at the teacher's weights
    loss.backward()
    optimizer.step()
    assert all(torch.equal(p, before[n]) for n, p in objective.teacher.named_parameters())
    _, logs = objective.loss(model, batch)
    assert logs["l2_pretrained"] > 0


def test_presets_and_options():
    imdb, snli = build_objective("rift-imdb"), build_objective("rift-snli")
    assert (imdb.beta, imdb.alpha) == (10.0, 0.1) and (snli.beta, snli.alpha) == (5.0, 0.7)
    assert build_objective("rift-snli", {"alpha": 0.3}).alpha == 0.3
    assert imdb.class_balanced_batches and snli.class_balanced_batches
    for epoch, factor in ((0, 0.1), (1, 0.55), (2, 1.0), (7, 1.0)):
        assert imdb.lr_factor(epoch) == factor
    model, tok = tiny_bert(2, seed=0)
    objective = rift(model, tok, adv_ce=1.0)
    objective.on_epoch_start(0)
    loss, logs = objective.loss(model, batch_of(tok))
    expected = logs["ce"] + 10 * logs["kl"] + 0.1 * logs["infonce"] + logs["adv_ce"]
    assert loss.item() == pytest.approx(expected, rel=1e-5)
