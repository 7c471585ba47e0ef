"""The optimizer and schedule: per-parameter weight decay and per-epoch LR factors decided by the objective."""

from types import SimpleNamespace

import pytest

from robustft.data.tasks import get_task
from robustft.models.factory import tiny_bert
from robustft.training.objectives import build_objective
from robustft.training.objectives.base import TrainContext
from robustft.training.optim import build_optimizer


def config(**overrides):
    values = {"lr": 1e-3, "weight_decay": 0.01, "warmup_ratio": 0.0, "epochs": 4, "lr_schedule": "constant"}
    return SimpleNamespace(**{**values, **overrides})


def rift_with_modules():
    model, tok = tiny_bert(2, seed=0)
    objective = build_objective("rift", {"teacher": "copy", "steps": 1})
    objective.neighbors = {}
    objective.setup(model, TrainContext(tok, get_task("sst2"), "tiny"))
    modules = {"model": model, **{f"objective.{k}": m for k, m in objective.modules().items()}}
    return model, objective, modules


def lrs(scheduler, optimizer, n):
    seen = []
    for _ in range(n):
        seen.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    return seen


def test_rift_warms_up_the_learning_rate_per_epoch_and_resumes_exactly():
    _, objective, modules = rift_with_modules()
    optimizer, scheduler = build_optimizer(modules, config(), 3, objective)
    assert lrs(scheduler, optimizer, 12) == pytest.approx([1e-4] * 3 + [5.5e-4] * 3 + [1e-3] * 6)
    # a resumed run rebuilds the optimizer and loads the scheduler state: the factors continue exactly
    optimizer, scheduler = build_optimizer(modules, config(), 3, objective)
    lrs(scheduler, optimizer, 4)
    state = scheduler.state_dict()
    optimizer2, scheduler2 = build_optimizer(modules, config(), 3, objective)
    scheduler2.load_state_dict(state)
    for group in optimizer2.param_groups:
        group["lr"] = scheduler2.get_last_lr()[0]
    assert lrs(scheduler2, optimizer2, 8) == pytest.approx([5.5e-4] * 2 + [1e-3] * 6)
    # the default objective leaves the loop's schedule alone: linear warm-up then decay
    standard = build_objective("standard")
    optimizer, scheduler = build_optimizer(modules, config(lr_schedule="linear", warmup_ratio=0.25), 2, standard)
    assert lrs(scheduler, optimizer, 8) == pytest.approx(
        [1e-3 * f for f in (1 / 3, 2 / 3, 1, 5 / 6, 4 / 6, 3 / 6, 2 / 6, 1 / 6)]
    )


def test_rift_loss_terms_are_not_scaled_by_the_warm_up():
    model, objective, _ = rift_with_modules()
    objective.on_epoch_start(0)
    from robustft.data.batching import collate, encode
    from robustft.data.example import Example

    tok = objective.candidates.tokenizer
    batch = collate(encode(tok, [Example("a good film", 1), Example("a bad film", 0)], 16), tok.pad_token_id)
    model.train()
    loss, logs = objective.loss(model, batch)
    assert loss.item() == pytest.approx(logs["ce"] + 10 * logs["kl"] + 0.1 * logs["infonce"], rel=1e-5)


def test_rift_weight_decay_is_zero_on_the_encoder_and_2e4_elsewhere_biases_included():
    model, objective, modules = rift_with_modules()
    optimizer, _ = build_optimizer(modules, config(), 3, objective)
    rate = {id(p): g["weight_decay"] for g in optimizer.param_groups for p in g["params"]}
    for name, p in model.named_parameters():
        assert rate[id(p)] == (0.0 if name.startswith("bert.") else 2e-4), name
    assert any(name.startswith("classifier.") and p.ndim == 1 for name, p in model.named_parameters())
    heads = [p for m in objective.modules().values() for p in m.parameters()]
    assert heads and all(rate[id(p)] == 2e-4 for p in heads)


def test_default_weight_decay_skips_biases_and_layer_norms():
    model, _ = tiny_bert(2, seed=0)
    optimizer, _ = build_optimizer({"model": model}, config(), 3, build_objective("standard"))
    rate = {id(p): g["weight_decay"] for g in optimizer.param_groups for p in g["params"]}
    for name, p in model.named_parameters():
        assert rate[id(p)] == (0.0 if p.ndim < 2 or "LayerNorm" in name else 0.01), name


def test_unknown_schedule_is_a_config_error():
    from robustft.errors import ConfigError

    model, _ = tiny_bert(2, seed=0)
    with pytest.raises(ConfigError):
        build_optimizer({"model": model}, config(lr_schedule="exponential"), 3, build_objective("standard"))


def test_cosine_schedule_is_torchs_cosine_annealing_stepped_per_batch():
    import torch

    model, _ = tiny_bert(2, seed=0)
    optimizer, scheduler = build_optimizer(
        {"model": model}, config(lr_schedule="cosine"), 3, build_objective("standard")
    )
    reference_opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1e-3)
    reference = torch.optim.lr_scheduler.CosineAnnealingLR(reference_opt, T_max=12)  # TextDefender's
    assert lrs(scheduler, optimizer, 12) == pytest.approx(lrs(reference, reference_opt, 12))


def test_ascc_preset_warms_up_per_epoch_like_its_release_then_holds_the_rate():
    from robustft.training.objectives.ascc import ASCC

    preset = ASCC.preset("sst2")
    assert (preset["lr"], preset["weight_decay"], preset["lr_schedule"], preset["group_by_length"]) == (
        2e-5,
        1e-6,
        "constant",
        False,
    )
    objective = build_objective("ascc", preset["method_args"])
    model, _ = tiny_bert(2, seed=0)
    optimizer, scheduler = build_optimizer({"model": model}, config(), 2, objective)
    assert lrs(scheduler, optimizer, 8) == pytest.approx([1e-4] * 2 + [5.5e-4] * 2 + [1e-3] * 4)


def test_adamw_is_fused_on_cpu_and_steps_like_the_foreach_adamw():
    import torch

    from robustft.training.objectives.base import Objective

    model, tok = tiny_bert(2, seed=0)
    model.eval()  # no dropout: both optimizers see the same gradients
    reference = {k: v.clone() for k, v in model.state_dict().items()}
    optimizer, _ = build_optimizer({"model": model}, config(), 3, Objective())
    assert optimizer.defaults["fused"] is True
    batch = tok(["a good film", "a bad one"], return_tensors="pt")

    def steps(opt):
        for _ in range(3):
            loss = torch.nn.functional.cross_entropy(model(**batch).logits, torch.tensor([1, 0]))
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
        return {k: v.clone() for k, v in model.named_parameters()}

    fused = steps(optimizer)
    model.load_state_dict(reference)
    groups = [{"params": g["params"], "weight_decay": g["weight_decay"]} for g in optimizer.param_groups]
    plain = torch.optim.AdamW(groups, lr=1e-3, fused=False, foreach=True)
    assert not plain.param_groups[0]["fused"]
    foreach = steps(plain)
    assert any(not torch.equal(value, reference[name]) for name, value in foreach.items())  # it did train
    for name, value in fused.items():
        torch.testing.assert_close(value, foreach[name], rtol=1e-5, atol=1e-6, msg=name)
