"""RIFT's loss against oracles written out by hand (docs/testing.md, mutation testing of objectives/rift.py):
InfoNCE and KL as loops over a tiny case, the pooled features by hand, the release's constants as printed."""

import math
import re
from types import SimpleNamespace

import pytest
import torch
from torch import nn

from robustft.adversary.embeds import forward_embeds
from robustft.data.batching import model_inputs
from robustft.data.tasks import get_task
from robustft.errors import ConfigError, RobustftError
from robustft.models.factory import tiny_bert
from robustft.training.objectives import build_objective
from robustft.training.objectives.base import TrainContext
from robustft.training.objectives.rift import (
    HEAD_WEIGHT_DECAY,
    RIFT,
    RiftImdb,
    RiftSnli,
    info_nce,
    pooled_features,
    projection_head,
    tap,
)
from test_rift import NEIGHBORS, batch_of, rift  # the same tiny RIFT set-up as the module's older tests


def hand_info_nce(students, teachers, tau):
    """Mean over teachers i of -log softmax_j(cos(t_i, s_j) / tau)[i], with loops."""
    n, total = len(students), 0.0
    for i in range(n):
        scores = []
        for j in range(n):
            t, s = teachers[i].tolist(), students[j].tolist()
            dot = sum(a * b for a, b in zip(t, s, strict=True))
            cos = dot / (math.sqrt(sum(a * a for a in t)) * math.sqrt(sum(b * b for b in s)))
            scores.append(cos / tau)
        total += math.log(sum(math.exp(x) for x in scores)) - scores[i]
    return total / n


def hand_kl(p_logits, q_logits):
    """KL(softmax p || softmax q) summed over classes, averaged over rows, with loops."""
    total = 0.0
    for p_row, q_row in zip(p_logits.tolist(), q_logits.tolist(), strict=True):
        zp, zq = sum(math.exp(x) for x in p_row), sum(math.exp(x) for x in q_row)
        for a, b in zip(p_row, q_row, strict=True):
            p, q = math.exp(a) / zp, math.exp(b) / zq
            total += p * math.log(p / q)
    return total / len(p_logits)


def hand_ce(logits, labels):
    rows = [
        math.log(sum(math.exp(x) for x in row)) - row[y]
        for row, y in zip(logits.tolist(), labels.tolist(), strict=True)
    ]
    return sum(rows) / len(rows)


def test_info_nce_is_the_hand_written_cross_entropy_of_cosines():
    # rows of different norms: the cosine must normalise each row (dim -1), not each column
    students = torch.tensor([[3.0, 0.0, 1.0], [0.5, 2.0, 0.0], [1.0, 1.0, -4.0]], dtype=torch.float64)
    teachers = torch.tensor([[1.0, 0.2, 0.0], [0.0, 5.0, 1.0], [2.0, -1.0, 0.5]], dtype=torch.float64)
    for tau in (0.2, 0.7):
        got = info_nce(students, teachers, tau).item()
        assert got == pytest.approx(hand_info_nce(students, teachers, tau), rel=1e-5)
    # the teacher picks among the students: swapping the roles changes the value
    assert info_nce(teachers, students, 0.2).item() == pytest.approx(hand_info_nce(teachers, students, 0.2), rel=1e-5)
    assert info_nce(teachers, students, 0.2).item() != pytest.approx(info_nce(students, teachers, 0.2).item())


def test_projection_head_is_hidden_512_relu_256():
    head = projection_head(8)
    assert [type(m) for m in head] == [nn.Linear, nn.ReLU, nn.Linear]
    assert (head[0].in_features, head[0].out_features, head[2].in_features, head[2].out_features) == (8, 512, 512, 256)
    small = projection_head(4, inner=3, out=2)
    assert (small[0].out_features, small[2].in_features, small[2].out_features) == (3, 3, 2)


def test_pooled_features_by_hand():
    hidden = torch.tensor([[[1.0, 2.0], [3.0, 4.0], [50.0, 60.0]], [[5.0, 6.0], [7.0, 8.0], [9.0, 10.0]]])
    mask = torch.tensor([[1, 1, 0], [1, 1, 1]])
    pooler = torch.tensor([[-1.0, -2.0], [-3.0, -4.0]])
    with_pooler = SimpleNamespace(last_hidden_state=hidden, pooler_output=pooler)
    without = SimpleNamespace(last_hidden_state=hidden, pooler_output=None)
    no_attribute = SimpleNamespace(last_hidden_state=hidden)
    assert torch.equal(pooled_features(with_pooler, mask, "pooler"), pooler)
    assert torch.equal(pooled_features(without, mask, "pooler"), hidden[:, 0])  # no pooler: [CLS]
    assert torch.equal(pooled_features(no_attribute, mask, "pooler"), hidden[:, 0])
    assert torch.equal(pooled_features(with_pooler, mask, "cls"), torch.tensor([[1.0, 2.0], [5.0, 6.0]]))
    mean = pooled_features(with_pooler, mask, "mean")  # padding (the 50, 60) left out
    assert torch.allclose(mean, torch.tensor([[2.0, 3.0], [7.0, 8.0]]))
    # an all-padding row divides by 1, not 0
    empty = pooled_features(with_pooler, torch.tensor([[0, 0, 0], [1, 0, 0]]), "mean")
    assert torch.equal(empty, torch.tensor([[0.0, 0.0], [5.0, 6.0]]))


def test_tap_sees_the_output_once_and_removes_its_hook():
    layer = nn.Linear(2, 2)
    x = torch.ones(1, 2)
    with tap(layer) as seen:
        out = layer(x)
    assert torch.equal(seen["out"], out)
    assert not layer._forward_hooks
    with pytest.raises(ValueError), tap(layer):
        raise ValueError("inside")
    assert not layer._forward_hooks


def test_constructor_defaults_and_errors():
    objective = RIFT()
    assert (objective.beta, objective.alpha, objective.tau) == (10.0, 0.1, 0.2)
    assert (objective.feature, objective.teacher_source, objective.adv_ce) == ("pooler", "pretrained", 0.0)
    assert objective.conditional_mi is True and objective.l2_pretrained == 0.0
    assert objective.teacher is None and objective.heads is None and objective.teacher_bytes == 0
    assert objective.encoder_prefix is None and objective.modules() == {}
    hull = objective.hull
    assert (hull.steps, hull.lr, hull.weight_decay, hull.entropy_weight) == (10, 1.0, 2e-5, 15.0)
    assert hull.entropy_norm == 38400 and hull.chunk is None
    assert objective.warmup == (0.1, 0.55) and objective.im_adversary_grad == "exact"
    assert RIFT(beta=0.0, alpha=0.0).beta == 0.0 and RIFT(beta=0.0, alpha=0.0).alpha == 0.0
    custom = RIFT(3.0, 0.4, 0.5, 4, 0.3, 1e-3, 2.0, 7.0, feature="mean", hull_chunk=2)
    assert (custom.beta, custom.alpha, custom.tau, custom.feature) == (3.0, 0.4, 0.5, "mean")
    assert (custom.hull.steps, custom.hull.lr, custom.hull.weight_decay) == (4, 0.3, 1e-3)
    assert (custom.hull.entropy_weight, custom.hull.entropy_norm, custom.hull.chunk) == (2.0, 7.0, 2)
    assert RIFT(slots=5).slots == 5 and RIFT(feature="cls").feature == "cls"
    assert RIFT(teacher="copy").teacher_source == "copy"
    assert RIFT(im_adversary_grad="model").im_adversary_grad == "model"
    with pytest.raises(ConfigError, match=r"^feature must be 'pooler', 'cls' or 'mean', not 'max'$"):
        RIFT(feature="max")
    with pytest.raises(
        ConfigError, match=r"^teacher must be 'pretrained' \(load the backbone again\) or 'copy', not 'x'$"
    ):
        RIFT(teacher="x")


def test_release_recipes_as_printed_in_rift_train():
    common = {"lr": 2e-5, "epochs": 20, "warmup_ratio": 0.0, "lr_schedule": "constant", "max_grad_norm": 0.0}
    imdb = {**common, "batch_size": 32, "max_length": 300}
    snli = {**common, "batch_size": 120, "max_length": 80}
    imdb["method_args"] = {"beta": 10.0, "alpha": 0.1, "im_adversary_grad": "exact"}
    snli["method_args"] = {"beta": 5.0, "alpha": 0.7, "im_adversary_grad": "exact"}
    assert RIFT.preset("imdb") == imdb and RIFT.preset("snli") == snli and RIFT.preset("sst2") == {}
    assert RiftImdb.preset("sst2") == imdb and RiftSnli.preset("imdb") == snli
    assert (RiftSnli().beta, RiftSnli().alpha, RiftImdb().beta, RiftImdb().alpha) == (5.0, 0.7, 10.0, 0.1)
    assert HEAD_WEIGHT_DECAY == 2e-4


def test_deviations_name_grouping_and_clipping():
    plain = RIFT.deviations(SimpleNamespace(group_by_length=False, max_grad_norm=0.0))
    assert plain == [
        "RIFT: the best epoch by clean dev accuracy (the release keeps the epoch of best ASCC-attack accuracy "
        "on the test set)",
        "RIFT: the backbone's own classifier head (the release: Linear-ReLU-Linear on the pooled output)",
    ]
    both = RIFT.deviations(SimpleNamespace(group_by_length=True, max_grad_norm=1.5))
    assert both[:2] == plain and len(both) == 4
    assert both[2] == (
        "RIFT: class-balanced batches grouped by length, for speed (the release draws them at random), so "
        "the InfoNCE negatives are of similar length"
    )
    assert both[3] == "RIFT: gradients clipped at norm 1.5 (the release does not clip)"


def test_setup_builds_frozen_teacher_and_one_head_pair_per_class():
    model, tok = tiny_bert(3, seed=0)
    objective = rift(model, tok)
    assert objective.encoder_prefix == "bert" and not objective.teacher.training
    assert objective.teacher is not model.base_model
    n_params = sum(p.numel() for p in model.base_model.parameters())
    assert objective.teacher_bytes == 4 * n_params
    for side in ("student", "teacher"):
        assert len(objective.heads[side]) == 3
        assert objective.heads[side][0][0].in_features == 64
    assert objective.heads["student"][0] is not objective.heads["teacher"][0]
    assert objective.modules() == {"rift_heads": objective.heads}
    assert len(rift(model, tok, conditional_mi=False).heads["teacher"]) == 1


def test_pretrained_teacher_is_the_saved_backbone(tmp_path):
    saved, tok = tiny_bert(2, seed=1)
    saved.save_pretrained(tmp_path, safe_serialization=True)
    model, _ = tiny_bert(2, seed=2)
    objective = build_objective("rift", {"steps": 1})
    objective.neighbors = NEIGHBORS
    objective.setup(model, TrainContext(tok, get_task("sst2"), str(tmp_path)))
    reference = dict(saved.base_model.named_parameters())
    teacher = dict(objective.teacher.named_parameters())
    assert teacher.keys() == reference.keys()
    assert all(torch.equal(p, reference[n]) for n, p in teacher.items())
    assert all(not p.requires_grad for p in teacher.values())


def test_an_im_folder_teaches_as_its_plain_encoder_and_a_broken_one_is_named(tmp_path):
    from robustft.models.im import convert

    saved, tok = tiny_bert(2, seed=1)
    convert(saved, arch="im", layers="all", K=2)
    saved.save_pretrained(tmp_path / "im", safe_serialization=True)
    objective = build_objective("rift", {"steps": 1})
    objective.neighbors = NEIGHBORS
    objective.setup(tiny_bert(2, seed=2)[0], TrainContext(tok, get_task("sst2"), str(tmp_path / "im")))
    assert {type(layer).__name__ for layer in objective.teacher.encoder.layer} == {"BertLayer"}
    (tmp_path / "bare").mkdir()
    (tmp_path / "bare" / "config.json").write_text((tmp_path / "im" / "config.json").read_text())
    name = str(tmp_path / "im" / ".." / "bare")  # not the resolved path: the message names both
    with pytest.raises(RobustftError, match=r"^cannot load a teacher model from '" + re.escape(name) + "' \\("):
        objective.setup(tiny_bert(2, seed=2)[0], TrainContext(tok, get_task("sst2"), name))


def test_weight_decay_is_zero_on_the_encoder_only():
    objective = RIFT()
    with pytest.raises(ConfigError, match=r"^method 'rift' needs setup\(\) before its optimizer is built$"):
        objective.weight_decay("model", "bert.x", None, 0.01)
    objective.encoder_prefix = "bert"
    assert objective.weight_decay("model", "bert.embeddings.word_embeddings.weight", None, 0.01) == 0.0
    assert objective.weight_decay("model", "classifier.bias", None, 0.01) == 2e-4
    assert objective.weight_decay("model", "bertish.weight", None, 0.01) == 2e-4
    assert objective.weight_decay("rift_heads", "bert.0.weight", None, 0.01) == 2e-4


def test_mutual_information_by_hand_with_identity_heads():
    objective = RIFT(tau=0.5)
    objective.heads = nn.ModuleDict(
        {
            "student": nn.ModuleList(nn.Identity() for _ in range(3)),
            "teacher": nn.ModuleList(nn.Identity() for _ in range(3)),
        }
    )
    torch.manual_seed(3)
    s, t = torch.randn(7, 4, dtype=torch.float64), torch.randn(7, 4, dtype=torch.float64)
    labels = torch.tensor([2, 0, 2, 0, 0, 2, 2])  # class 1 absent: its heads are not used
    expected = (
        hand_info_nce(s[[1, 3, 4]], t[[1, 3, 4]], 0.5) + hand_info_nce(s[[0, 2, 5, 6]], t[[0, 2, 5, 6]], 0.5)
    ) / 2
    assert objective.mutual_information_loss(s, t, labels).item() == pytest.approx(expected, rel=1e-5)
    # each class through its own pair: a shift in class 0's teacher head moves class 0's term only
    objective.heads["teacher"][0] = _Shift(1.0)
    shifted = (
        hand_info_nce(s[[1, 3, 4]], t[[1, 3, 4]] + 1.0, 0.5) + hand_info_nce(s[[0, 2, 5, 6]], t[[0, 2, 5, 6]], 0.5)
    ) / 2
    assert objective.mutual_information_loss(s, t, labels).item() == pytest.approx(shifted, rel=1e-5)
    objective.conditional_mi = False
    assert objective.mutual_information_loss(s, t, labels).item() == pytest.approx(
        hand_info_nce(s, t + 1.0, 0.5), rel=1e-5
    )


class _Shift(nn.Module):
    def __init__(self, by):
        super().__init__()
        self.by = by

    def forward(self, x):
        return x + self.by


def _loss_case(**args):
    model, tok = tiny_bert(2, seed=0)
    objective = rift(model, tok, beta=3.0, alpha=0.5, **args)
    batch = batch_of(tok)
    embeds = model.get_input_embeddings()(batch["input_ids"]).detach()
    fixed = embeds + 0.3 * torch.randn(embeds.shape, generator=torch.Generator().manual_seed(0))
    objective.adversarial_embeds = lambda m, b: fixed
    with torch.no_grad():
        perturb = next(model.bert.encoder.parameters())
        perturb.add_(0.05)  # the student has moved away from its teacher
    return model, objective, batch, fixed


def hand_mean(hidden, mask):
    """The mean of each row's hidden states over its real tokens, with loops."""
    rows = []
    for states, keep in zip(hidden.tolist(), mask.tolist(), strict=True):
        real = [s for s, k in zip(states, keep, strict=True) if k]
        rows.append([sum(col) / len(real) for col in zip(*real, strict=True)])
    return torch.tensor(rows)


def features(output, mask, feature):
    if feature == "pooler":
        return output.pooler_output
    return output.last_hidden_state[:, 0] if feature == "cls" else hand_mean(output.last_hidden_state, mask)


@pytest.mark.parametrize("feature", ["pooler", "mean", "cls"])
def test_loss_is_ce_plus_beta_kl_plus_alpha_infonce_by_hand(feature):
    model, objective, batch, fixed = _loss_case(feature=feature)
    with pytest.raises(ConfigError, match=r"^method 'rift' needs setup\(\) \(teacher, heads, candidates\)"):
        RIFT().loss(model, batch)
    loss, logs = objective.loss(model, batch)
    with torch.no_grad():
        labels = batch["labels"]
        clean = model(**model_inputs(batch)).logits
        adv = forward_embeds(model, batch, fixed)
        mask = batch["attention_mask"]
        students = features(model.bert(inputs_embeds=fixed, attention_mask=mask), mask, feature)
        teachers = features(objective.teacher(**model_inputs(batch)), mask, feature)
        mi = 0.0
        for c in (0, 1):
            rows = labels == c
            heads = objective.heads["student"][c], objective.heads["teacher"][c]
            mi += hand_info_nce(heads[0](students[rows]), heads[1](teachers[rows]), 0.2) / 2
    ce, kl = hand_ce(clean, labels), hand_kl(clean, adv)
    assert set(logs) == {"ce", "kl", "infonce"}
    assert logs["ce"] == pytest.approx(ce, rel=1e-4) and logs["kl"] == pytest.approx(kl, rel=1e-3)
    assert logs["infonce"] == pytest.approx(mi, rel=1e-4)
    assert loss.item() == pytest.approx(ce + 3.0 * kl + 0.5 * mi, rel=1e-4)
    assert loss.requires_grad


def test_adversarial_ce_and_pull_to_pretrained_by_hand():
    model, objective, batch, fixed = _loss_case(adv_ce=2.0, l2_pretrained=0.25)
    loss, logs = objective.loss(model, batch)
    with torch.no_grad():
        adv = forward_embeds(model, batch, fixed)
        pull = sum(
            (p - dict(objective.teacher.named_parameters())[n]).pow(2).sum().item()
            for n, p in model.bert.named_parameters()
        )
    assert pull > 0
    assert logs["adv_ce"] == pytest.approx(hand_ce(adv, batch["labels"]), rel=1e-4)
    assert logs["l2_pretrained"] == pytest.approx(pull, rel=1e-4)
    base = logs["ce"] + 3.0 * logs["kl"] + 0.5 * logs["infonce"]
    assert loss.item() == pytest.approx(base + 2.0 * logs["adv_ce"] + 0.25 * pull, rel=1e-4)


def test_pull_needs_a_shared_parameter_and_skips_other_shapes():
    model, objective, _, _ = _loss_case()
    objective.teacher = nn.Linear(2, 2)
    with pytest.raises(
        ConfigError, match=r"^l2_pretrained: the student's encoder shares no parameter names with the teacher$"
    ):
        objective.pull_to_pretrained(model)
    # a teacher parameter of the same name but another shape is left out, one of the same shape counts
    teacher = nn.Module()
    teacher.pooler = nn.Module()
    teacher.pooler.dense = nn.Linear(64, 64)
    teacher.embeddings = nn.Module()
    teacher.embeddings.word_embeddings = nn.Embedding(3, 64)
    with torch.no_grad():
        teacher.pooler.dense.weight.zero_()
        teacher.pooler.dense.bias.zero_()
    objective.teacher = teacher
    expected = model.bert.pooler.dense.weight.pow(2).sum() + model.bert.pooler.dense.bias.pow(2).sum()
    assert objective.pull_to_pretrained(model).item() == pytest.approx(expected.item(), rel=1e-5)
