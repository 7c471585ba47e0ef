"""Shared machinery of the embedding-space objectives (PGD, FreeLB, FreeLB++, TRADES).

A perturbation `delta` lives on the word embeddings (`get_input_embeddings()`), is fed back through
`inputs_embeds`, and moves by normalised gradient ascent, as in TextDefender's embedding-level trainer:
L2 init `U(-1, 1) * init_mag / sqrt(n_tokens * hidden)`, step `lr * g / ||g||_2` per example, optional
projection to `||delta||_2 <= max_norm` (0 = unbounded); or an L-inf variant (`lr * sign(g)`, clamp).

`scope` says which tokens may move: "all" (every attended token, as FreeLB and TextDefender do) or
"field" (only the words of the task's perturbable field: the hypothesis of a pair, never special tokens).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from robustft.adversary.embeds import field_token_mask, forward_embeds
from robustft.errors import ConfigError
from robustft.models.im import ADVERSARY_GRAD_MODES, adversary_gradients
from robustft.train.objectives.base import Objective


@dataclass(frozen=True)
class DeltaSettings:
    steps: int = 5
    lr: float = 0.03
    init_mag: float = 0.05
    max_norm: float = 0.0
    norm: str = "l2"
    init: str = "uniform"  # "uniform" (FreeLB/TextDefender) or "normal" (TRADES: init_mag * N(0, 1))

    def __post_init__(self):
        if self.norm not in ("l2", "linf"):
            raise ConfigError(f"adversary norm must be 'l2' or 'linf', not {self.norm!r}")
        if self.init not in ("uniform", "normal"):
            raise ConfigError(f"adversary init must be 'uniform' or 'normal', not {self.init!r}")
        if self.steps < 1:
            raise ConfigError("an embedding adversary needs at least one step")


def init_delta(embeds: torch.Tensor, mask: torch.Tensor, s: DeltaSettings) -> torch.Tensor:
    """The starting perturbation, zero outside `mask` ([B, L] float)."""
    m = mask.unsqueeze(-1).to(embeds.dtype)
    if s.init_mag <= 0:
        return torch.zeros_like(embeds)
    if s.init == "normal":
        return (torch.randn_like(embeds) * s.init_mag * m).detach()
    delta = torch.empty_like(embeds).uniform_(-1, 1) * m
    if s.norm == "l2":
        dims = (mask.sum(1) * embeds.shape[-1]).clamp_min(1).to(embeds.dtype)
        return (delta * (s.init_mag / dims.sqrt()).view(-1, 1, 1)).detach()
    return (delta * s.init_mag).detach()


def step_delta(delta: torch.Tensor, grad: torch.Tensor, mask: torch.Tensor, s: DeltaSettings) -> torch.Tensor:
    """One ascent step, then the projection onto the norm ball (when bounded); zero outside `mask`."""
    m = mask.unsqueeze(-1).to(delta.dtype)
    grad = grad.to(delta.dtype) * m
    if s.norm == "l2":
        denom = grad.flatten(1).norm(dim=1).clamp_min(1e-8).view(-1, 1, 1)
        delta = delta + s.lr * grad / denom
        if s.max_norm > 0:
            norms = delta.flatten(1).norm(dim=1).view(-1, 1, 1)
            delta = delta * torch.where(norms > s.max_norm, s.max_norm / norms.clamp_min(1e-12), torch.ones_like(norms))
    else:
        delta = delta + s.lr * grad.sign()
        if s.max_norm > 0:
            delta = delta.clamp(-s.max_norm, s.max_norm)
    return (delta * m).detach()


def ascend(model, batch: dict, embeds: torch.Tensor, mask: torch.Tensor, gain: Callable[[torch.Tensor], torch.Tensor],
           s: DeltaSettings, im_gradients: str = "exact") -> torch.Tensor:
    """PGD on the embeddings: maximise gain(logits) over delta; returns the detached final delta.

    Only delta receives gradients here (torch.autograd.grad), so the model's .grad stays untouched.
    `im_gradients` "exact" differentiates IM layers through their K steps; "model" uses their own mode.
    """
    embeds = embeds.detach()
    delta = init_delta(embeds, mask, s)
    with adversary_gradients(model, im_gradients):
        for _ in range(s.steps):
            delta.requires_grad_()
            with torch.enable_grad():
                (grad,) = torch.autograd.grad(gain(forward_embeds(model, batch, embeds + delta)), delta)
            delta = step_delta(delta.detach(), grad, mask, s)
    return delta


def ce_gain(labels: torch.Tensor):
    return lambda logits: F.cross_entropy(logits.float(), labels)


def kl(p_logits: torch.Tensor, q_logits: torch.Tensor) -> torch.Tensor:
    """KL(softmax p || softmax q), batch mean; gradients flow through both arguments."""
    return F.kl_div(F.log_softmax(q_logits.float(), dim=-1), F.log_softmax(p_logits.float(), dim=-1),
                    reduction="batchmean", log_target=True)


class EmbeddingObjective(Objective):
    """An objective whose adversary perturbs word embeddings within a token scope."""

    scope: str = "all"

    def __init__(self, scope: str = "all", im_adversary_grad: str = "exact"):
        if scope not in ("all", "field"):
            raise ConfigError(f"scope must be 'all' or 'field', not {scope!r}")
        if im_adversary_grad not in ADVERSARY_GRAD_MODES:
            raise ConfigError(f"im_adversary_grad must be one of {ADVERSARY_GRAD_MODES}, not {im_adversary_grad!r}")
        self.scope = scope
        self.im_adversary_grad = im_adversary_grad
        self.tokenizer = None
        self.task = None

    def setup(self, model, ctx) -> None:
        self.tokenizer, self.task = ctx.tokenizer, ctx.task

    def perturb_mask(self, batch: dict) -> torch.Tensor:
        if self.scope == "field":
            if self.tokenizer is None:
                raise ConfigError("scope='field' needs setup() (the tokenizer and task) before the first batch")
            return field_token_mask(batch, self.tokenizer, self.task)
        return batch["attention_mask"].float()
