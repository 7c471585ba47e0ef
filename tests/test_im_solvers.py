"""The IM step's solvers (gd, gd-backtracking, anderson) under every gradient mode: convergence, masking,
divergence fallback, exact gradients, settings round-trip."""

import pytest
import torch

from im_helpers import TEXTS, Cubic, assert_weight_gradient_matches_finite_differences, batch, logits
from robustft.errors import ConfigError
from robustft.models.factory import load_classifier, tiny_bert
from robustft.models.im import ImSettings, convert, encoder_layers, im_stats, settings_of
from robustft.models.im_layer import ImLayerStats, implicit_class

SOLVERS = ["gd", "gd-backtracking", "anderson"]
GRADS = ["unrolled", "jfb", "explicit"]
# gd-backtracking starts its line search at eta; 1.0 lets it take steps gd could not take at a fixed eta
ETA = {"gd": 0.2, "gd-backtracking": 1.0, "anderson": 0.2}


def residuals(model):
    return {k: v["last_relative_residual"] for k, v in im_stats(model).items()}


def test_gd_is_the_default_and_configs_saved_before_solvers_load_as_gd():
    assert ImSettings().solver == "gd"
    old = {
        "arch": "im",
        "layers": [4, 5, 6],
        "K": 2,
        "eta": 0.01,
        "dt": 1.0,
        "form": "increment",
        "grad": "explicit",
        "on_divergence": "fallback",
        "tol": 0.01,
    }
    assert ImSettings.from_dict(old).solver == "gd"
    for bad in ({"solver": "newton"}, {"beta": 0.0}, {"beta": 1.5}, {"memory": 0}, {"halvings": -1}):
        with pytest.raises(ConfigError, match=next(iter(bad))):
            ImSettings(**bad)
    assert ImSettings(solver="anderson", dt=1.0).damping == 0.5  # z <- (h + F(z)) / 2 in the increment form
    assert ImSettings(solver="anderson", form="layer").damping == 1.0
    assert ImSettings(solver="anderson", beta=0.3).damping == 0.3


@pytest.mark.parametrize("solver", SOLVERS)
def test_each_solver_reduces_the_residual_on_a_contractive_case(solver):
    model, tok = tiny_bert(seed=0)
    convert(model, arch="im", layers="all", form="layer", dt=0.2, K=6, eta=ETA[solver], solver=solver)
    logits(model, batch(tok))
    for name, res in residuals(model).items():
        assert len(res) == 7 and res[-1] < 0.5 * res[0], (name, res)
        if solver != "anderson":  # descent methods never raise the energy here; Anderson need not be monotone
            assert all(b <= a for a, b in zip(res, res[1:], strict=False)), (name, res)
    assert all(s["diverged"] == 0 for s in im_stats(model).values())


def test_anderson_reaches_a_tolerance_fixed_eta_gd_does_not_at_the_same_k():
    model, tok = tiny_bert(seed=0)
    enc = batch(tok)
    convert(model, arch="im", layers="all", form="increment", dt=1.0, K=6, solver="anderson")
    logits(model, enc)
    anderson = residuals(model)
    convert(model, arch="im", layers="all", form="increment", dt=1.0, K=6, eta=0.05, solver="gd")
    logits(model, enc)
    gd = residuals(model)
    assert gd["layer 1"][0] == anderson["layer 1"][0]  # the same explicit start (later layers' inputs differ)
    for name in anderson:
        assert anderson[name][-1] < 0.01 * anderson[name][0], anderson[name]
        assert gd[name][-1] > 0.3 * gd[name][0], gd[name]


def test_backtracking_never_raises_the_energy_where_fixed_eta_diverges():
    model, tok = tiny_bert(seed=0)
    enc = batch(tok)
    convert(model, arch="im", layers="all", form="layer", dt=1.0, K=4, eta=50.0, solver="gd")
    logits(model, enc)
    assert all(s["diverged"] == 2 for s in im_stats(model).values())
    convert(model, arch="im", layers="all", form="layer", dt=1.0, K=4, eta=50.0, solver="gd-backtracking", halvings=20)
    logits(model, enc)
    for name, stats in im_stats(model).items():
        res = stats["last_relative_residual"]
        assert stats["diverged"] == 0 and res[-1] < res[0], (name, res)
        assert all(b <= a for a, b in zip(res, res[1:], strict=False)), (name, res)


@pytest.mark.parametrize("solver", SOLVERS)
def test_padding_never_enters_any_solve(solver):
    model, tok = tiny_bert(seed=0)
    convert(model, arch="im", layers="all", K=3, eta=ETA[solver], solver=solver)
    padded, alone = batch(tok), batch(tok, TEXTS[1:])
    assert padded["attention_mask"][1].sum() < padded["attention_mask"].shape[1]  # really padded
    assert torch.allclose(logits(model, padded)[1], logits(model, alone)[0], atol=1e-5)


@pytest.mark.parametrize("solver", SOLVERS)
def test_settings_round_trip_through_save_and_load(solver, tmp_path):
    model, tok = tiny_bert(seed=0)
    enc = batch(tok)
    convert(
        model,
        arch="im",
        layers="2",
        K=3,
        eta=0.3,
        form="layer",
        dt=0.5,
        grad="jfb",
        solver=solver,
        beta=0.7,
        memory=3,
        halvings=2,
    )
    expected = logits(model, enc)
    model.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    loaded, _ = load_classifier(str(tmp_path))
    assert settings_of(loaded) == settings_of(model)
    assert (settings_of(loaded).solver, settings_of(loaded).memory) == (solver, 3)
    assert torch.equal(logits(loaded, enc), expected)


@pytest.mark.parametrize("grad", GRADS)
@pytest.mark.parametrize("solver", SOLVERS)
def test_every_solver_and_gradient_mode_shares_the_forward_value_and_trains(solver, grad):
    model, tok = tiny_bert(seed=0)
    enc = batch(tok)
    convert(model, arch="im", layers="all", K=3, eta=ETA[solver], grad=grad, solver=solver)
    reference = logits(model, enc)
    with torch.inference_mode():
        assert torch.allclose(model(**enc).logits, reference, atol=1e-6)
    out = model(**enc, labels=torch.tensor([1, 0]))
    assert torch.allclose(out.logits, reference, atol=1e-6)
    out.loss.backward()
    grads = [p.grad for p in model.parameters() if p.requires_grad]
    assert all(g is not None and torch.isfinite(g).all() for g in grads)
    assert encoder_layers(model)[0].attention.self.query.weight.grad.abs().sum() > 0


@pytest.mark.parametrize("solver", SOLVERS)
def test_unrolled_gradients_match_finite_differences(solver):
    model, tok = tiny_bert(seed=0, attn_implementation="eager")
    model = model.double()
    # a solve that moves: the layer form's residual is larger than the increment form's on a tiny BERT
    convert(model, arch="im", layers="all", form="layer", dt=0.5, K=3, eta=0.5, grad="unrolled", solver=solver)
    enc = batch(tok)
    assert_weight_gradient_matches_finite_differences(model, enc, eps=1e-6)
    res = residuals(model)["layer 1"]
    assert res[-1] < 0.9 * res[0]  # the solve really moved, so the gradient runs through it


def _cubic_im(grad, solver):
    layer = Cubic()
    layer.__class__ = implicit_class(Cubic)
    layer.im_settings = ImSettings(K=3, eta=0.2, grad=grad, solver=solver)
    layer.im_stats = ImLayerStats(layer=1)
    return layer


def _param_grads(layer, h, explicit=False):
    layer.zero_grad(set_to_none=True)
    out = Cubic.forward(layer, h) if explicit else layer(h)  # the explicit step: F(h) in the increment form
    out.pow(2).sum().backward()
    return torch.stack([layer.a.grad, layer.c.grad])


@pytest.mark.parametrize("grad", GRADS)
@pytest.mark.parametrize("solver", SOLVERS)
def test_a_row_that_cannot_be_solved_keeps_the_explicit_step_and_spares_the_others(solver, grad):
    layer = _cubic_im(grad, solver)
    torch.manual_seed(0)
    good, bad = 0.1 * torch.randn(1, 3, 4), 10 * torch.randn(1, 3, 4)
    together = _param_grads(layer, torch.cat([good, bad]))
    assert torch.isfinite(together).all()
    stats = layer.im_stats
    if solver == "gd-backtracking":
        # no trial step lowers the bad row's energy without overflowing: it stays at the explicit step, and
        # nothing counts as diverged because its energy never rose
        assert stats.diverged == 0
    else:
        assert stats.diverged == 1 and stats.nonfinite == 1  # only the large row blew up, and it fell back
    alone = _param_grads(layer, good)  # the good row solved on its own
    assert layer.im_stats.diverged == stats.diverged  # and it does not diverge
    if not (solver == "gd-backtracking" and grad == "jfb"):
        # the bad row carries the explicit step's gradient (under jfb a row that stayed put, not diverged, gets
        # jfb's gradient at the point it stayed at, like any other row)
        assert torch.allclose(together, alone + _param_grads(layer, bad, explicit=True), rtol=1e-5)
    with torch.no_grad():
        assert torch.equal(layer(bad), Cubic.forward(layer, bad))


def test_anderson_fallback_raises_when_asked():
    from robustft.models.im import ImDivergence

    layer = _cubic_im("explicit", "anderson")
    layer.im_settings = ImSettings(K=3, solver="anderson", on_divergence="raise")
    with pytest.raises(ImDivergence, match="layer 1"):
        layer(10 * torch.randn(1, 3, 4))


@pytest.mark.parametrize("solver", ["gd-backtracking", "anderson"])
def test_new_solvers_train_under_bf16_autocast(solver):
    model, tok = tiny_bert(seed=0, hidden_dropout_prob=0.1)
    enc = batch(tok)
    convert(model, arch="im", layers="all", K=3, eta=ETA[solver], solver=solver, grad="unrolled")
    reference = logits(model, enc)
    model.train()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = model(**enc, labels=torch.tensor([1, 0]))
    out.loss.backward()
    assert torch.isfinite(out.loss) and torch.allclose(out.logits.float(), reference, atol=0.1)
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)
