"""Shared inputs and checks of the IM tests on tiny random encoders."""

import torch

from robustft.models.im import encoder_layers, im_stats

TEXTS = ["a gripping , funny and moving film .", "dull ."]


def batch(tok, texts=TEXTS):
    return tok(texts, padding=True, return_tensors="pt")


def logits(model, enc):
    with torch.no_grad():
        return model(**enc).logits


def assert_weight_gradient_matches_finite_differences(model, enc, eps: float) -> None:
    """Backprop's directional derivative of the loss along a seeded random direction of the first layer's
    intermediate weight equals the central difference (the model in float64), and no IM solve diverged."""
    labels = torch.tensor([1, 0])
    weight = encoder_layers(model)[0].intermediate.dense.weight
    direction = torch.randn(weight.shape, generator=torch.Generator().manual_seed(0), dtype=weight.dtype)
    model.zero_grad()
    model(**enc, labels=labels).loss.backward()
    analytic = (weight.grad * direction).sum()
    with torch.no_grad():
        weight += eps * direction
        up = model(**enc, labels=labels).loss
        weight -= 2 * eps * direction
        down = model(**enc, labels=labels).loss
        weight += eps * direction
    numeric = (up - down) / (2 * eps)
    assert torch.isclose(analytic, numeric, rtol=1e-5, atol=1e-9)
    assert all(s["diverged"] == 0 for s in im_stats(model).values())
