"""Embedding-space adversaries (PGD, FreeLB, FreeLB++, TRADES, InfoBERT's inner steps).

A perturbation `delta` lives on the word embeddings (`get_input_embeddings()`), is fed back through
`inputs_embeds`, and moves by normalised gradient ascent, as in TextDefender's embedding-level trainer:
L2 init `U(-1, 1) * init_mag / sqrt(n_tokens * hidden)`, step `lr * g / ||g||_2` per example, optional
projection to `||delta||_2 <= max_norm` (0 = unbounded); or an L-inf variant (`lr * sign(g)`, clamp).

`perturbation_mask` says which tokens may move: scope "all" (every attended token, as FreeLB and
TextDefender do) or "field" (only the words of the task's perturbable field: the hypothesis of a pair,
never special tokens).

Two adversaries: `ascend` (PGD / TRADES: K ascent steps that touch only delta, then the caller computes
its loss at the final point) and `free_steps` (FreeLB, FreeLB++, InfoBERT: every step's loss also trains
the model; it returns the losses for the caller to sum, never calling backward itself).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from robustft.adversary.embeds import field_token_mask, forward_embeds, word_embeddings
from robustft.errors import ConfigError
from robustft.models.im import adversary_gradients

SCOPES = ("all", "field")


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


def perturbation_mask(batch: dict, scope: str, tokenizer=None, task=None) -> torch.Tensor:
    """[B, L] float: 1 where delta may move (scope "all": attended tokens; "field": the perturbable field)."""
    if scope == "field":
        if tokenizer is None:
            raise ConfigError("scope='field' needs the tokenizer and task (the objective's setup())")
        return field_token_mask(batch, tokenizer, task)
    if scope != "all":
        raise ConfigError(f"scope must be one of {', '.join(SCOPES)}, not {scope!r}")
    return batch["attention_mask"].float()


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


def ascend(
    model,
    batch: dict,
    embeds: torch.Tensor,
    mask: torch.Tensor,
    gain: Callable[[torch.Tensor], torch.Tensor],
    s: DeltaSettings,
    im_gradients: str = "exact",
) -> torch.Tensor:
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


ACCUMULATE_MODES = ("graph", "grads")


def free_steps(
    model,
    batch: dict,
    mask: torch.Tensor,
    step_loss: Callable,
    s: DeltaSettings,
    im_gradients: str = "exact",
    accumulate: str = "grads",
    params: list | None = None,
    extra: Callable | None = None,
) -> tuple[list[torch.Tensor], torch.Tensor]:
    """FreeLB's K steps; returns (the K step losses, the last delta). The caller sums the losses (their
    parameter gradients average over the steps, as FreeLB's repeated backward does) and returns them;
    nothing here calls backward or touches `.grad`.

    At each step `step_loss(output, delta)` is computed on the model's output at embeddings + delta (with
    hidden states), and delta ascends its gradient. `extra(output, delta_grad)`, when given, adds a term
    to the step's loss that the ascent does not see but that may depend on the ascent's gradient
    (InfoBERT's anchored features). The embeddings are looked up again at every step so each step's
    gradient reaches the embedding table, as in FreeLB. The ascent's and the parameters' gradients come
    from the same forward, so `im_gradients="exact"` makes both exact on an IM model.

    accumulate "graph": every step's graph is kept until the caller's backward (K graphs of memory).
    "grads" (default): steps 1..K-1 take their parameter gradients at once (torch.autograd.grad, `.grad`
    untouched), summed into one buffer G, and free their graphs; they come back as their detached losses
    plus one term sum_p <p, G_p> - (the same, detached), whose value is 0 and whose gradient is G: the same
    sum and the same gradient with one graph and one gradient-sized buffer of memory. `params`: what the
    step losses train (default: the model's parameters).
    """
    if accumulate not in ACCUMULATE_MODES:
        raise ConfigError(f"accumulate must be one of {', '.join(ACCUMULATE_MODES)}, not {accumulate!r}")
    params = [p for p in (params if params is not None else model.parameters()) if p.requires_grad]
    with torch.no_grad():
        delta = init_delta(word_embeddings(model, batch), mask, s)
    losses, summed = [], None
    with adversary_gradients(model, im_gradients):
        for k in range(s.steps):
            last = k == s.steps - 1
            delta.requires_grad_()
            output = forward_embeds_output(model, batch, word_embeddings(model, batch) + delta)
            loss_k = step_loss(output, delta)
            grad = None
            if not last or extra is not None:
                (grad,) = torch.autograd.grad(loss_k, delta, retain_graph=True)
            if extra is not None:
                loss_k = loss_k + extra(output, grad.detach())
            if last or accumulate == "graph":
                losses.append(loss_k)
            else:
                summed = add_grads(summed, torch.autograd.grad(loss_k, params, allow_unused=True))
                losses.append(loss_k.detach())
            if not last:
                delta = step_delta(delta.detach(), grad, mask, s)
    if summed is not None:
        losses.append(gradient_term(params, summed, losses[-1]))
    return losses, delta.detach()


def add_grads(summed: list | None, grads) -> list:
    """The parameter gradients summed so far plus `grads` (None: a parameter the loss did not reach)."""
    if summed is None:
        return list(grads)
    return [a if g is None else g if a is None else a + g for a, g in zip(summed, grads, strict=True)]


def gradient_term(params: list, summed: list, like: torch.Tensor) -> torch.Tensor:
    """A term of value 0 whose gradient is `summed`: the earlier steps' parameter gradients, their graphs freed."""
    linear = sum(
        ((p * g.to(p.dtype)).sum() for p, g in zip(params, summed, strict=True) if g is not None), like.new_zeros(())
    )
    return linear - linear.detach()


def forward_embeds_output(model, batch: dict, embeds: torch.Tensor):
    """The full model output (logits and hidden states) on `embeds` in place of the word embeddings."""
    kwargs = {"inputs_embeds": embeds, "attention_mask": batch["attention_mask"], "output_hidden_states": True}
    if batch.get("token_type_ids") is not None:
        kwargs["token_type_ids"] = batch["token_type_ids"]
    return model(**kwargs)


def ce_gain(labels: torch.Tensor):
    return lambda logits: F.cross_entropy(logits.float(), labels)


def kl(p_logits: torch.Tensor, q_logits: torch.Tensor) -> torch.Tensor:
    """KL(softmax p || softmax q), batch mean; gradients flow through both arguments."""
    return F.kl_div(
        F.log_softmax(q_logits.float(), dim=-1),
        F.log_softmax(p_logits.float(), dim=-1),
        reduction="batchmean",
        log_target=True,
    )
