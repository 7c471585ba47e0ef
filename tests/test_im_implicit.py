"""The implicit-function gradient of the IM solve (grad "implicit", and "adaptive", which picks it where the solve
converged): against finite differences and the unrolled gradient on tiny random encoders, and a wrong adjoint that
these checks catch."""

import pytest
import torch

from im_helpers import Cubic, assert_weight_gradient_matches_finite_differences, batch
from robustft.errors import ConfigError
from robustft.models import im_layer
from robustft.models.factory import tiny_bert
from robustft.models.im import ImSettings, convert, exact_gradients, im_stats
from robustft.models.im_settings import check_user_settings

LABELS = torch.tensor([1, 0])
# a solve that moves and converges: the layer form's residual is larger than the increment form's on a tiny BERT;
# anderson K 30 brings the relative residual to ~1e-16 in float64, so the unrolled gradient is the implicit one
CONVERGED = dict(arch="im", layers="all", form="layer", dt=0.5, K=30, solver="anderson")


def tiny_double():
    model, tok = tiny_bert(seed=0, attn_implementation="eager")
    return model.double(), batch(tok)


def encoder_gradient(model, enc):
    model.zero_grad(set_to_none=True)
    model(**enc, labels=LABELS).loss.backward()
    return torch.cat([p.grad.flatten() for p in model.base_model.encoder.parameters()])


def cosine_to_unrolled(model, enc, **grad) -> float:
    convert(model, **CONVERGED, grad="unrolled")
    exact = encoder_gradient(model, enc)
    convert(model, **CONVERGED, **grad)
    return float(torch.nn.functional.cosine_similarity(encoder_gradient(model, enc), exact, dim=0))


def test_settings_take_the_new_modes_and_name_bad_values():
    assert ImSettings(grad="implicit", K=7).adjoint_steps == 7  # adjoint_K None: as many iterations as the solve
    assert ImSettings(grad="implicit", K=7, adjoint_K=3).adjoint_steps == 3
    assert ImSettings(grad="adaptive").converged_tol == 0.005
    assert ImSettings().grad == "unrolled"
    with pytest.raises(ConfigError, match="im.grad must be one of .*implicit"):
        ImSettings(grad="implict")
    for key, bad in (("adjoint_K", -1), ("adjoint_K", 2.5), ("converged_tol", -0.1), ("converged_tol", "x")):
        with pytest.raises(ConfigError, match=f"im.{key}"):
            ImSettings(**{key: bad})
    with pytest.raises(ConfigError, match="im.adjoint_K must be at most"):
        check_user_settings({"grad": "implicit", "adjoint_K": 10**6})
    # settings saved before these fields existed still load
    assert ImSettings.from_dict({"grad": "unrolled", "K": 2}).adjoint_K is None


def test_implicit_gradient_matches_finite_differences_where_the_solve_converges():
    model, enc = tiny_double()
    convert(model, **CONVERGED, grad="implicit")
    assert_weight_gradient_matches_finite_differences(model, enc, eps=1e-6)
    stats = im_stats(model)["layer 1"]
    assert stats["last_relative_residual"][-1] < 1e-10
    assert stats["last_adjoint_residual"][-1] < 1e-10 < stats["last_adjoint_residual"][0]


def test_implicit_gradient_matches_the_unrolled_one_where_the_solve_converges():
    model, enc = tiny_double()
    assert cosine_to_unrolled(model, enc, grad="implicit") > 0.999999


def test_a_wrong_adjoint_fails_the_same_checks(monkeypatch):
    """The checks above can fail: an adjoint solve that stops short (1 iteration), or one that drops J^T (the
    jfb gradient), misses the finite differences and the unrolled gradient."""
    model, enc = tiny_double()
    assert cosine_to_unrolled(model, enc, grad="implicit", adjoint_K=1) < 0.9999
    convert(model, **CONVERGED, grad="implicit", adjoint_K=1)
    with pytest.raises(AssertionError):
        assert_weight_gradient_matches_finite_differences(model, enc, eps=1e-6)
    monkeypatch.setattr(im_layer, "_adjoint_anderson", lambda s, jacobian_t, v, stats: v)
    assert cosine_to_unrolled(model, enc, grad="implicit") < 0.999
    convert(model, **CONVERGED, grad="implicit")
    with pytest.raises(AssertionError):
        assert_weight_gradient_matches_finite_differences(model, enc, eps=1e-6)


def test_adaptive_takes_the_implicit_gradient_only_where_the_solve_converged():
    model, enc = tiny_double()
    assert cosine_to_unrolled(model, enc, grad="adaptive") > 0.999999
    assert {s["last_gradient"] for s in im_stats(model).values()} == {"implicit"}
    # a tolerance no solve meets: every layer back-propagates through its iterations, bit for bit unrolled
    convert(model, **CONVERGED, grad="unrolled")
    exact = encoder_gradient(model, enc)
    convert(model, **CONVERGED, grad="adaptive", converged_tol=0.0)
    assert torch.equal(encoder_gradient(model, enc), exact)
    assert {s["last_gradient"] for s in im_stats(model).values()} == {"unrolled"}


def test_forward_values_do_not_change_and_adversaries_get_the_unrolled_gradient():
    model, enc = tiny_double()
    short = {**CONVERGED, "K": 3}
    convert(model, **short, grad="unrolled")
    reference = model(**enc).logits.detach()
    for grad in ("implicit", "adaptive"):
        convert(model, **short, grad=grad)
        assert torch.equal(model(**enc).logits.detach(), reference)
        with exact_gradients(model) as switched:
            assert switched
            encoder_gradient(model, enc)
            assert all(s["last_adjoint_residual"] == [] for s in im_stats(model).values())


@pytest.mark.parametrize("grad", ["implicit", "adaptive"])
def test_a_diverged_row_keeps_the_explicit_gradient_and_spares_the_others(grad):
    layer = Cubic()
    layer.__class__ = im_layer.implicit_class(Cubic)
    layer.im_settings = ImSettings(K=3, grad=grad, solver="anderson", converged_tol=1.0)
    layer.im_stats = im_layer.ImLayerStats(layer=1)

    def grads(h, explicit=False):
        layer.zero_grad(set_to_none=True)
        (Cubic.forward(layer, h) if explicit else layer(h)).pow(2).sum().backward()
        return torch.stack([layer.a.grad, layer.c.grad])

    torch.manual_seed(0)
    good, bad = 0.1 * torch.randn(1, 3, 4), 10 * torch.randn(1, 3, 4)
    together = grads(torch.cat([good, bad]))
    assert layer.im_stats.diverged == 1 and torch.isfinite(together).all()
    assert torch.allclose(together, grads(good) + grads(bad, explicit=True), rtol=1e-5)


@pytest.mark.slow
def test_adaptive_is_within_cosine_0_99_of_the_exact_gradient_on_real_minilm():
    """The studies' setting on the real MiniLM and a real SST-2 batch (benchmarks/im_gradient_fidelity.py's): layer
    6's solve does not converge in 10 iterations, so it stays unrolled; the others take the implicit gradient."""
    from robustft.data.batching import collate, encode, model_inputs
    from robustft.data.tasks import get_task, load_examples
    from robustft.models.factory import load_classifier

    torch.manual_seed(0)
    model, tok = load_classifier("minilm", get_task("sst2").label_names)
    batch = collate(encode(tok, load_examples("sst2", "train", n=16, seed=0), 64), tok.pad_token_id)
    inputs, labels = model_inputs(batch), batch["labels"]
    model.train()

    def gradient(grad):
        convert(model, arch="im", form="increment", dt=1.0, layers="upper-half", K=10, solver="anderson", grad=grad)
        model.zero_grad(set_to_none=True)
        torch.manual_seed(1)  # the same dropout masks
        model(**inputs, labels=labels).loss.backward()
        return torch.cat([p.grad.flatten() for p in model.base_model.encoder.parameters()]).double()

    exact = gradient("unrolled")
    assert float(torch.nn.functional.cosine_similarity(gradient("adaptive"), exact, dim=0)) > 0.99
    assert {s["last_gradient"] for s in im_stats(model).values()} == {"implicit", "unrolled"}
