"""Shared inputs and checks of the IM tests on tiny random encoders."""

import torch
from transformers import MPNetConfig, MPNetForSequenceClassification

from robustft.models.factory import load_tokenizer
from robustft.models.im import encoder_layers, im_stats

TEXTS = ["a gripping , funny and moving film .", "dull ."]


def batch(tok, texts=TEXTS):
    return tok(texts, padding=True, return_tensors="pt")


def logits(model, enc):
    with torch.no_grad():
        return model(**enc).logits


# A 2-layer encoder of hidden size 32 without dropout, for any config class (BERT, RoBERTa, MPNet).
TINY_ENCODER = dict(
    vocab_size=100,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=64,
    max_position_embeddings=40,
    hidden_dropout_prob=0.0,
    attention_probs_dropout_prob=0.0,
    pad_token_id=1,
)


def tiny_mpnet(bias_scale: float = 2.0):
    """A random 2-layer MPNet in float64 whose relative position bias matters: the bias table (buckets x heads,
    added to every layer's attention scores) is drawn with standard deviation `bias_scale` instead of 0.02."""
    torch.manual_seed(0)
    cfg = MPNetConfig(**TINY_ENCODER, relative_attention_num_buckets=32, attn_implementation="eager")
    model = MPNetForSequenceClassification(cfg).double().eval()
    with torch.no_grad():
        model.mpnet.encoder.relative_attention_bias.weight.normal_(0.0, bias_scale)
    return model


def tiny_mpnet_classifier(seed: int = 0):
    """A random 2-layer MPNet (float32, dropout on, hidden 64, relative position bias drawn at scale 1) over the
    vocabulary of the MiniLM tokenizer (real word pieces, offline; padding id 0), and that tokenizer: what the
    training objectives need to run on an MPNet."""
    tok = load_tokenizer("minilm")
    torch.manual_seed(seed)
    cfg = MPNetConfig(
        vocab_size=len(tok),
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=128,
        max_position_embeddings=514,
        pad_token_id=tok.pad_token_id,
        num_labels=2,
    )
    model = MPNetForSequenceClassification(cfg)
    with torch.no_grad():
        model.mpnet.encoder.relative_attention_bias.weight.normal_(0.0, 1.0)
    return model.eval(), tok


def mpnet_batch():
    """Two rows of MPNet token ids (0 <s>, 2 </s>, 1 padding), the second padded."""
    ids = torch.tensor([[0, 5, 6, 7, 9, 11, 2], [0, 8, 13, 2, 1, 1, 1]])
    return {"input_ids": ids, "attention_mask": (ids != 1).long()}


def assert_weight_gradient_matches_finite_differences(model, enc, eps: float, weight=None) -> None:
    """Backprop's directional derivative of the loss along a seeded random direction of `weight` (default: the
    first layer's intermediate weight) equals the central difference (the model in float64), and no IM solve
    diverged."""
    labels = torch.tensor([1, 0])
    weight = encoder_layers(model)[0].intermediate.dense.weight if weight is None else weight
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


class Cubic(torch.nn.Module):
    """A toy residual layer whose solve contracts for small inputs and overflows for large ones."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Parameter(torch.tensor(0.5))
        self.c = torch.nn.Parameter(torch.tensor(0.1))

    def forward(self, u, attention_mask=None):
        return self.a * u + self.c * u.pow(3)
