"""The IM step against oracles written out by hand (docs/testing.md, mutation testing of models/im_layer.py): a
1-D toy layer F(u) = a*u + c*u^3 whose solver iterates are computed with Python floats, fixed points checked by
their defining equation z = h + dt*f(z), gradients by the implicit-function theorem and by finite differences in
float64, and the helpers (token mask, Armijo step, Anderson weights, divergence counts) on hand-made cases."""

import logging
import math

import pytest
import torch
from torch import nn

from im_helpers import Cubic
from robustft.models.im_layer import (
    ImDivergence,
    ImFallbackError,
    ImLayerStats,
    _armijo_step,
    _converged,
    _explicit_step,
    _is_power_of_ten,
    _masked_norm,
    _mixing_weights,
    _recomputed,
    _same_dropout_each_call,
    _token_mask,
    check_fallback_share,
    fallback_share,
    implicit_class,
)
from robustft.models.im_settings import ImSettings

H = [[0.5, -1.0, 0.25], [0.8, 0.3, -0.6]]  # two examples of three 1-D tokens


def toy(a=0.5, c=0.0, **settings):
    layer = Cubic().double()
    with torch.no_grad():
        layer.a.fill_(a)
        layer.c.fill_(c)
    layer.__class__ = implicit_class(Cubic)
    layer.im_settings = ImSettings(**settings)
    layer.im_stats = ImLayerStats(layer=3)
    return layer


def h_tensor(rows=H):
    return torch.tensor(rows, dtype=torch.float64).unsqueeze(-1)


def hand_solve(h, a, c, dt, form, steps, eta=None, beta=None):
    """One example's tokens by Python floats: the explicit start, then `steps` of gd (eta) or of the damped
    fixed-point iteration (beta, Anderson with memory 1); returns the iterate and |r(z_k)|/|z_k| for k = 0..K."""

    def f(u):
        big_f = a * u + c * u**3
        return big_f if form == "layer" else big_f - u

    def df(u):
        d = a + 3 * c * u**2
        return d if form == "layer" else d - 1

    z = [x + dt * f(x) for x in h]
    relative = []
    for _ in range(steps + 1):
        r = [zi - hi - dt * f(zi) for zi, hi in zip(z, h, strict=True)]
        relative.append(math.sqrt(sum(x * x for x in r)) / math.sqrt(sum(x * x for x in z)))
        if len(relative) > steps:
            break
        if eta is not None:
            z = [zi - eta * ri * (1 - dt * df(zi)) for zi, ri in zip(z, r, strict=True)]
        else:
            z = [zi - beta * ri for zi, ri in zip(z, r, strict=True)]
    return z, relative


@pytest.mark.parametrize("form, dt", [("layer", 0.5), ("increment", 0.7), ("increment", 1.0)])
def test_gd_iterates_are_the_hand_computed_ones(form, dt):
    layer = toy(a=0.6, c=0.05, form=form, dt=dt, K=3, eta=0.3, solver="gd")
    with torch.no_grad():
        out = layer(h_tensor())
    hand = [hand_solve(row, 0.6, 0.05, dt, form, 3, eta=0.3) for row in H]
    assert out.flatten().tolist() == pytest.approx([x for z, _ in hand for x in z], rel=1e-12)
    mean_relative = [sum(x) / 2 for x in zip(*(r for _, r in hand), strict=True)]
    assert layer.im_stats.last_relative_residual == pytest.approx(mean_relative, rel=1e-10)
    assert (layer.im_stats.forwards, layer.im_stats.examples, layer.im_stats.diverged) == (1, 2, 0)


def test_damped_fixed_point_iteration_is_anderson_with_memory_1():
    layer = toy(a=0.6, c=0.05, form="layer", dt=0.5, K=4, solver="anderson", memory=1, beta=0.4)
    with torch.no_grad():
        out = layer(h_tensor())
    hand = [hand_solve(row, 0.6, 0.05, 0.5, "layer", 4, beta=0.4)[0] for row in H]
    assert out.flatten().tolist() == pytest.approx(sum(hand, []), rel=1e-12)


def test_anderson_solves_the_defining_equation_and_a_linear_one_in_two_steps():
    layer = toy(a=0.6, c=0.05, form="layer", dt=0.5, K=30, solver="anderson")
    h = h_tensor()
    with torch.no_grad():
        z = layer(h)
    assert torch.allclose(z, h + 0.5 * (0.6 * z + 0.05 * z**3), rtol=0, atol=1e-12)  # z = h + dt*f(z)
    # a linear layer, one token: Anderson with memory 2 is the secant method, exact on a line after its second step
    linear = toy(a=0.6, form="layer", dt=0.5, K=2, solver="anderson", memory=2)
    with torch.no_grad():
        z = linear(torch.tensor([[[2.0]]], dtype=torch.float64))
    assert z.item() == pytest.approx(2.0 / (1 - 0.5 * 0.6), rel=1e-5)


def test_padding_keeps_the_explicit_step_in_every_solver():
    mask = torch.tensor([[1, 1, 0]])  # the third token is padding
    additive = (1.0 - mask[:, None, None, :].double()) * torch.finfo(torch.float64).min
    h = h_tensor(H[:1])
    for solver, eta in (("gd", 0.3), ("gd-backtracking", 1.0), ("anderson", 0.3)):
        layer = toy(a=0.6, c=0.05, form="layer", dt=0.5, K=3, eta=eta, solver=solver)
        with torch.no_grad():
            out = layer(h, additive)
        explicit = 0.25 + 0.5 * (0.6 * 0.25 + 0.05 * 0.25**3)
        assert out[0, 2, 0].item() == pytest.approx(explicit, rel=1e-14), solver
        alone = toy(a=0.6, c=0.05, form="layer", dt=0.5, K=3, eta=eta, solver=solver)
        with torch.no_grad():
            assert torch.allclose(out[:, :2], alone(h[:, :2]), rtol=1e-12), solver


def test_explicit_architecture_and_k_0_are_one_explicit_step():
    h = h_tensor()
    for settings in ({"arch": "ex", "K": 3}, {"arch": "im", "K": 0}):
        layer = toy(a=0.6, c=0.05, form="layer", dt=0.5, **settings)
        assert torch.equal(layer(h), h + 0.5 * (0.6 * h + 0.05 * h**3))
        assert layer.im_stats.forwards == 0  # nothing was solved
    moved = toy(a=0.6, c=0.05, form="layer", dt=0.5, K=1, eta=0.3)
    assert not torch.allclose(moved(h), h + 0.5 * (0.6 * h + 0.05 * h**3))


class PairCubic(Cubic):
    """A layer that returns (hidden, attentions) as MPNet's and DeBERTa's do."""

    def forward(self, u, attention_mask=None):
        return super().forward(u), "attentions"


def test_tuple_outputs_keep_their_extras():
    for settings in ({"arch": "ex"}, {"K": 2, "eta": 0.3}):
        layer = PairCubic().double()
        layer.__class__ = implicit_class(PairCubic)
        layer.im_settings, layer.im_stats = ImSettings(form="layer", dt=0.5, **settings), ImLayerStats(layer=1)
        out = layer(h_tensor())
        assert isinstance(out, tuple) and out[1] == "attentions" and out[0].shape == (2, 3, 1)


def test_anderson_keeps_the_dtype_of_a_bf16_layer():
    layer = toy(a=0.6, c=0.05, form="layer", dt=0.5, K=2, solver="anderson").to(torch.bfloat16)
    with torch.no_grad():
        out = layer(h_tensor().to(torch.bfloat16))
    assert out.dtype == torch.bfloat16


def test_inference_mode_gives_the_same_solution():
    layer = toy(a=0.6, c=0.05, form="layer", dt=0.5, K=3, eta=0.3)
    with torch.no_grad():
        expected = layer(h_tensor())
    assert not expected.requires_grad  # no graph of the solve is kept without gradients
    with torch.inference_mode():
        assert torch.equal(layer(h_tensor()), expected)


def implicit_derivatives(h, a, c, dt):
    """By the implicit-function theorem at z* = h + dt*(a z* + c z*^3) (layer form), per token:
    dz*/da = dt z* / D, dz*/dc = dt z*^3 / D, dz*/dh = 1 / D with D = 1 - dt (a + 3 c z*^2)."""
    z = h
    for _ in range(200):  # Newton on z - h - dt f(z) = 0
        z = z - (z - h - dt * (a * z + c * z**3)) / (1 - dt * (a + 3 * c * z**2))
    d = 1 - dt * (a + 3 * c * z**2)
    return dt * z / d, dt * z**3 / d, 1 / d


@pytest.mark.parametrize("grad", ["implicit", "adaptive"])
def test_implicit_gradient_is_the_implicit_function_theorem_s(grad):
    layer = toy(a=0.6, c=0.05, form="layer", dt=0.5, K=40, solver="anderson", grad=grad, converged_tol=1e-6)
    h = h_tensor().requires_grad_(True)
    z = layer(h)
    assert torch.allclose(z, h + 0.5 * (0.6 * z + 0.05 * z**3), rtol=0, atol=1e-12)  # the solution's value
    z.sum().backward()
    by_hand = [implicit_derivatives(x, 0.6, 0.05, 0.5) for row in H for x in row]
    assert layer.a.grad.item() == pytest.approx(sum(d[0] for d in by_hand), rel=1e-9)
    assert layer.c.grad.item() == pytest.approx(sum(d[1] for d in by_hand), rel=1e-9)
    assert h.grad.flatten().tolist() == pytest.approx([d[2] for d in by_hand], rel=1e-9)
    if grad == "adaptive":
        assert layer.im_stats.last_gradient == "implicit"


def test_implicit_padding_keeps_the_explicit_step_in_value_and_gradient():
    layer = toy(a=0.6, c=0.05, form="layer", dt=0.5, K=40, solver="anderson", grad="implicit")
    additive = torch.tensor([[[[0.0, 0.0, torch.finfo(torch.float64).min]]]], dtype=torch.float64)
    h = h_tensor(H[:1]).requires_grad_(True)
    z = layer(h, additive)
    real, pad = z[0, :2, 0].detach(), H[0][2]
    assert torch.allclose(real, h[0, :2, 0].detach() + 0.5 * (0.6 * real + 0.05 * real**3), rtol=0, atol=1e-12)
    assert z[0, 2, 0].item() == pytest.approx(pad + 0.5 * (0.6 * pad + 0.05 * pad**3), rel=1e-14)
    z.sum().backward()
    by_hand = [implicit_derivatives(x, 0.6, 0.05, 0.5) for x in H[0][:2]]
    explicit_dh = 1 + 0.5 * (0.6 + 3 * 0.05 * pad**2)  # the padding token: d z_0 / dh
    assert h.grad.flatten().tolist() == pytest.approx([d[2] for d in by_hand] + [explicit_dh], rel=1e-9)
    assert layer.a.grad.item() == pytest.approx(sum(d[0] for d in by_hand) + 0.5 * pad, rel=1e-9)


def test_implicit_gradient_of_a_diverged_row_is_the_explicit_step_s():
    layer = toy(a=0.6, c=0.05, form="layer", dt=0.5, K=40, solver="anderson", grad="implicit")
    bad = [30.0, -30.0, 40.0]
    z = layer(h_tensor([H[0], bad]))
    assert layer.im_stats.diverged == 1
    z.sum().backward()
    by_hand = [implicit_derivatives(x, 0.6, 0.05, 0.5) for x in H[0]]
    # the bad row falls back to z_0 = h + dt*(a h + c h^3): d/da = dt*h, d/dc = dt*h^3
    assert layer.a.grad.item() == pytest.approx(sum(d[0] for d in by_hand) + 0.5 * sum(bad), rel=1e-9)
    assert layer.c.grad.item() == pytest.approx(sum(d[1] for d in by_hand) + 0.5 * sum(x**3 for x in bad), rel=1e-9)


def test_adjoint_residuals_of_a_linear_layer_by_hand():
    # J = dt*a on every token, so from g = v: |v + J g - g| / |v| = |J|, then (damped, memory 1) |1 - (1-J)(1+bJ)|
    layer = toy(a=0.6, form="layer", dt=0.5, K=5, solver="anderson", grad="implicit", memory=1, beta=0.5)
    h = h_tensor().requires_grad_(True)
    (0.01 * layer(h)).sum().backward()  # |v| < 1 per row: the ratio is to |v| itself
    j, b = 0.3, 0.5
    expected = [j, abs(1 - (1 - j) * (1 + b * j))]
    assert layer.im_stats.last_adjoint_residual[:2] == pytest.approx(expected, rel=1e-9)
    assert len(layer.im_stats.last_adjoint_residual) == 5


def finite_difference(layer, h, eps=1e-6):
    """Central differences of sum(layer(h)) along a, c and each entry of h."""

    def value():
        with torch.no_grad():
            return layer(h).sum().item()

    out = []
    for p in (layer.a, layer.c):
        with torch.no_grad():
            p += eps
            up = value()
            p -= 2 * eps
            down = value()
            p += eps
        out.append((up - down) / (2 * eps))
    return out


@pytest.mark.parametrize("solver", ["gd", "gd-backtracking", "anderson"])
def test_unrolled_gradient_matches_finite_differences_in_float64(solver):
    layer = toy(a=0.6, c=0.05, form="layer", dt=0.5, K=3, eta=0.3, solver=solver, grad="unrolled", memory=2)
    h = h_tensor()  # no gradient on the input: the weights alone must build the graph
    layer(h).sum().backward()
    numeric = finite_difference(layer, h)
    assert [layer.a.grad.item(), layer.c.grad.item()] == pytest.approx(numeric, rel=1e-6)
    adaptive = toy(
        a=0.6, c=0.05, form="layer", dt=0.5, K=3, eta=0.3, solver=solver, grad="adaptive", converged_tol=0.0, memory=2
    )
    adaptive(h).sum().backward()
    assert adaptive.im_stats.last_gradient == "unrolled"
    assert [adaptive.a.grad.item(), adaptive.c.grad.item()] == pytest.approx(numeric, rel=1e-6)


def test_recomputed_unrolled_anderson_has_the_same_gradient():
    grads = []
    for recompute in (False, True):
        layer = toy(a=0.6, c=0.05, form="layer", dt=0.5, K=3, solver="anderson", grad="unrolled", recompute=recompute)
        layer(h_tensor()).sum().backward()
        grads.append([layer.a.grad.item(), layer.c.grad.item()])
    assert grads[0] == pytest.approx(grads[1], rel=1e-12)
    u = torch.tensor([1.5], dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(_recomputed(lambda x: x**3)(u).sum(), u)
    assert g.item() == pytest.approx(3 * 1.5**2)


@pytest.mark.parametrize("solver", ["gd", "anderson"])
def test_jfb_and_explicit_gradients_by_hand(solver):
    # jfb: d/da of h + dt*(a z_K + c z_K^3) at the fixed z_K is dt*z_K; d/dh is 1
    layer = toy(a=0.6, c=0.05, form="layer", dt=0.5, K=3, eta=0.3, grad="jfb", solver=solver)
    h = h_tensor().requires_grad_(True)
    z = layer(h)
    z.sum().backward()
    assert layer.a.grad.item() == pytest.approx(0.5 * z.detach().sum().item(), rel=1e-12)
    assert layer.c.grad.item() == pytest.approx(0.5 * z.detach().pow(3).sum().item(), rel=1e-12)
    assert torch.allclose(h.grad, torch.ones_like(h))
    # explicit: the gradient of z_0 = h + dt*(a h + c h^3): dt*h, dt*h^3 and 1 + dt*(a + 3 c h^2)
    layer = toy(a=0.6, c=0.05, form="layer", dt=0.5, K=3, eta=0.3, grad="explicit", solver=solver)
    h = h_tensor().requires_grad_(True)
    layer(h).sum().backward()
    assert layer.a.grad.item() == pytest.approx(0.5 * sum(map(sum, H)), rel=1e-12)
    assert torch.allclose(h.grad, 1 + 0.5 * (0.6 + 3 * 0.05 * h.detach() ** 2))


def test_armijo_step_halves_until_sufficient_decrease():
    # E(z) = 0.5*z^2 per row (r(z) = z): from z = 2 (gradient 2) a step a gives E = 0.5*(2 - 2a)^2, accepted when
    # that is at most 2 - 1e-4*a*4
    def residual(z):
        return z, None

    s = ImSettings(solver="gd-backtracking", eta=4.0, halvings=4)
    z = torch.tensor([[[2.0]], [[2.0]]], dtype=torch.float64)
    energy, grad = torch.tensor([2.0, 2.0], dtype=torch.float64), z.clone()
    trial, size = _armijo_step(s, residual, z, grad, energy, None)
    assert size.tolist() == [1.0, 1.0] and trial.tolist() == [1.0, 1.0]  # 4 and 2 fail, 1 lands on 0
    # later steps start at twice the row's last one, capped at eta: 0.25 -> 0.5 (accepted), 3 -> 6 -> 4 (then 1)
    trial, size = _armijo_step(s, residual, z, grad, energy, torch.tensor([0.25, 3.0], dtype=torch.float64))
    assert size.tolist() == [0.5, 1.0]
    few = ImSettings(solver="gd-backtracking", eta=4.0, halvings=1)  # only 4 and 2 tried: no step
    _, size = _armijo_step(few, residual, z, grad, energy, None)
    assert size.tolist() == [0.0, 0.0]
    # a trial that overflows is refused: E(z - a g) = inf for any a here
    _, size = _armijo_step(s, lambda u: (u * math.inf, None), z, grad, energy, None)
    assert size.tolist() == [0.0, 0.0]


def test_backtracking_iterates_by_hand():
    # F = 0 (a = c = 0), layer form: r(z) = z - h, E = 0.5*|z - h|^2 and z_0 = h, a solved start: every step is 0
    layer = toy(a=0.0, c=0.0, form="layer", dt=0.5, K=2, eta=1.0, solver="gd-backtracking")
    with torch.no_grad():
        assert torch.equal(layer(h_tensor()), h_tensor())
    # F(u) = a*u: r = (1 - dt a) z - h; with eta 1 the first trial overshoots unless (1 - dt a)^2 <= 2
    layer = toy(a=-4.0, form="layer", dt=0.5, K=1, eta=1.0, solver="gd-backtracking", halvings=6)
    h = torch.tensor([[[1.0]]], dtype=torch.float64)
    with torch.no_grad():
        z = layer(h).item()
    z0, k = 1.0 + 0.5 * -4.0, 3.0  # z_0 = -1, r = 3 z - 1 = -4, gradient k*r = -12
    e0, step = 0.5 * (k * z0 - 1) ** 2, 1.0
    while 0.5 * (k * (z0 + 12 * step) - 1) ** 2 > e0 - 1e-4 * step * 144:
        step /= 2
    assert z == pytest.approx(z0 + 12 * step, rel=1e-12)


def test_mixing_weights_by_hand():
    one = _mixing_weights([torch.ones(3, 2, 1)])
    assert one.tolist() == [[1.0], [1.0], [1.0]] and one.dtype == torch.float64
    # orthogonal histories: minimising sum w_i^2 |g_i|^2 under sum w_i = 1 gives w_i ~ 1/(|g_i|^2 + ridge)
    g1, g2 = torch.tensor([[[3.0], [0.0]]]), torch.tensor([[[0.0], [1.0]]])
    ridge = 1e-6 * (9.0 + 1.0) / 2
    inverse = [1 / (9 + ridge), 1 / (1 + ridge)]
    assert _mixing_weights([g1, g2])[0].tolist() == pytest.approx([x / sum(inverse) for x in inverse], rel=1e-12)
    # the ridge is scaled per example: a second, much larger row leaves the first row's weights as they were
    both = _mixing_weights([torch.cat([g1, 100 * g1]), torch.cat([g2, 100 * g2])])
    assert both[0].tolist() == pytest.approx([x / sum(inverse) for x in inverse], rel=1e-12)
    # on a line, the weights that zero w1 g1 + w2 g2: g1 = 2, g2 = -1 -> w = (1/3, 2/3)
    line = _mixing_weights([torch.tensor([[[2.0]]]), torch.tensor([[[-1.0]]])])
    assert line[0].tolist() == pytest.approx([1 / 3, 2 / 3], rel=1e-5)
    broken = _mixing_weights([torch.tensor([[[math.nan]]]), torch.tensor([[[1.0]]])])
    assert broken.tolist() == [[0.0, 1.0]]  # no usable weights: the latest iterate


def test_token_mask_reads_every_mask_layout():
    hidden = torch.zeros(2, 3, 4)
    assert torch.equal(_token_mask(None, hidden), torch.ones(2, 3, 1))
    keys = torch.tensor([[True, True, False], [True, False, False]])
    expected = keys.float().unsqueeze(-1)
    four = keys[:, None, None, :]
    assert torch.equal(_token_mask(four, hidden), expected)  # (batch, 1, 1, key) boolean
    additive = (~four).float() * torch.finfo(torch.float32).min
    assert torch.equal(_token_mask(additive, hidden), expected)
    assert torch.equal(_token_mask(additive * 0.75, hidden), expected)  # a large negative, not the very minimum
    assert torch.equal(_token_mask(four.long(), hidden), expected)
    # (batch, 1, query, key): a key is real if any query attends it (a causal-looking mask with padded rows)
    square = four.expand(2, 1, 3, 3).clone()
    square[:, :, 0, :] = False
    assert torch.equal(_token_mask(square, hidden), expected)
    assert torch.equal(_token_mask(keys[:, None, :].expand(2, 3, 3), hidden), expected)  # 3-d
    assert torch.equal(_token_mask(keys.long(), hidden), expected)  # 2-d
    wider = torch.cat([torch.ones(2, 2, dtype=torch.bool), keys], dim=1)  # keys of a longer prefix: the last 3
    assert torch.equal(_token_mask(wider, hidden), expected)


def test_small_helpers_by_hand():
    z = torch.tensor([[[3.0], [4.0], [12.0]]])
    assert _masked_norm(z, torch.tensor([[[1.0], [1.0], [0.0]]])).tolist() == [5.0]
    assert [n for n in range(1, 1001) if _is_power_of_ten(n)] == [1, 10, 100, 1000]
    assert not _is_power_of_ten(0)
    h, fh = torch.tensor([2.0]), torch.tensor([5.0])
    assert _explicit_step(h, fh, ImSettings(form="layer", dt=0.5)).item() == 4.5
    assert _explicit_step(h, fh, ImSettings(form="increment", dt=1.0)).item() == 5.0
    assert _explicit_step(h, fh, ImSettings(form="increment", dt=0.5)).item() == 3.5
    r, mask = torch.tensor([[[3.0], [4.0]], [[0.0], [1.0]]]), torch.ones(2, 2, 1)
    zs = torch.tensor([[[10.0], [0.0]], [[0.0], [10.0]]])  # relative residuals 0.5 and 0.1: mean 0.3
    assert _converged(r, zs, mask, None, 0.3) and not _converged(r, zs, mask, None, 0.29)
    assert _converged(r, zs, mask, torch.tensor([False, True]).view(-1, 1, 1), 0.1)  # the kept row alone
    # iterates of norm below 1: the norm is floored at 1e-12 only, so the ratios stay 0.5 and 0.1
    assert not _converged(r / 100, zs / 100, mask, None, 0.29)


def test_fallback_share_and_its_limit():
    stats = {"layer 1": {"examples": 100, "diverged": 3}, "layer 2": {"examples": 100, "diverged": 7}}
    assert fallback_share(stats) == 0.05 and fallback_share({}) is None
    assert fallback_share({"layer 1": {"examples": 0, "diverged": 0}}) is None
    check_fallback_share(0.05, False, "x")  # at the limit: allowed
    check_fallback_share(0.9, True, "x")
    check_fallback_share(None, False, "x")
    message = (
        "dev: 5.1% of the IM solves fell back to the explicit step (more than 5%), so this IM model computes EX-BERT "
        "on much of its input; lower im.eta or im.K, or pass --allow_im_fallback to go on and record the share"
    )
    with pytest.raises(ImFallbackError) as err:
        check_fallback_share(0.051, False, "dev")
    assert str(err.value) == message


def test_stats_as_dict_and_defaults():
    stats = ImLayerStats(layer=2)
    assert stats.as_dict() == {
        "forwards": 0,
        "examples": 0,
        "diverged": 0,
        "nonfinite": 0,
        "last_relative_residual": [],
        "last_adjoint_residual": [],
        "last_gradient": None,
    }
    stats = ImLayerStats(2, 3, 4, 5, 6, [0.5], [0.25], "implicit")
    assert list(stats.as_dict().values()) == [3, 4, 5, 6, [0.5], [0.25], "implicit"]


def test_divergence_counts_at_the_tolerance_and_its_messages(caplog):
    layer = toy(K=2, tol=0.01)
    out = torch.zeros(3, 1, 1)
    first = torch.tensor([1.0, 1.0, 4.0], dtype=torch.float64)
    last = torch.tensor([1.01, 1.0101, math.nan], dtype=torch.float64)  # at, above the tolerance; not finite
    norms = [torch.tensor([1.0, 2.0, 0.0])] * 2
    with caplog.at_level(logging.DEBUG, logger="robustft.im"):
        diverged = layer._check(out, [first, last], norms)
    assert diverged.tolist() == [False, True, True]
    stats = layer.im_stats
    assert (stats.forwards, stats.examples, stats.diverged, stats.nonfinite) == (1, 3, 2, 1)
    # |r|/|z| = sqrt(2E)/|z| per row, mean over rows; a norm of 0 counts as 1e-12, a NaN as inf
    assert stats.last_relative_residual[0] == pytest.approx((math.sqrt(2) + math.sqrt(2) / 2 + math.sqrt(8) * 1e12) / 3)
    assert stats.last_relative_residual[1] == math.inf
    assert [r.levelname for r in caplog.records] == ["DEBUG"]  # 2 diverged: not a power of ten, not the whole batch
    assert caplog.records[0].getMessage() == "IM layer 3: 2 diverged solves so far (1 non-finite) of 3 examples"
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="robustft.im"):
        layer._check(torch.zeros(1, 1, 1), [first[:1], last[1:2]], [norms[0][:1]] * 2)  # 3 so far, the whole batch
    assert caplog.records[-1].getMessage() == (
        "IM layer 3: 3 diverged solves so far (1 non-finite) of 4 examples; fell back to the explicit step"
    )
    outfinite = torch.tensor([[[math.inf]]])  # a non-finite output with a finite energy diverges too
    assert layer._check(outfinite, [first[:1], first[:1]], [norms[0][:1]] * 2).tolist() == [True]
    strict = toy(K=2, tol=0.01, on_divergence="raise")
    with pytest.raises(ImDivergence) as err:
        strict._check(out, [first, last], norms)
    assert str(err.value) == (
        "IM solve diverged at layer 3 for 2 of 3 examples (1 non-finite; energy 4 -> nan): lower im.eta or im.K, "
        "or use on_divergence='fallback'"
    )


def test_same_dropout_masks_within_one_step_only_in_training():
    net = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
    x = torch.ones(8, 4)
    net.train()
    with _same_dropout_each_call(net) as call:
        first, second = call(net, x), call(net, x)
    assert torch.equal(first, second)
    with _same_dropout_each_call(net) as call:
        assert not torch.equal(call(net, x), first)  # a new step draws new masks
    net.eval()
    state = torch.get_rng_state()
    with _same_dropout_each_call(net) as call:
        assert torch.equal(call(net, x), net[0](x))
    assert torch.equal(torch.get_rng_state(), state)  # no seed drawn outside training
    plain = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.0)).train()
    state = torch.get_rng_state()
    with _same_dropout_each_call(plain) as call:
        call(plain, x)
    assert torch.equal(torch.get_rng_state(), state)  # no dropout to fix: no seed drawn


def test_implicit_class_is_made_once_per_base():
    made = implicit_class(Cubic)
    assert made.__name__ == "ImplicitCubic" and made._im_base_class is Cubic
    assert implicit_class(Cubic) is made and implicit_class(made) is made
    assert made.__mro__[1].__name__ == "ImplicitStepMixin" and made.__mro__[2] is Cubic
