"""The ASCC convex-hull adversary (Dong et al., ICLR 2021), as RIFT runs it.

Each perturbable word gets logits over its candidate slots; its adversarial embedding is the
softmax-weighted mix of its candidates' embeddings (masked slots at -500). The logits start
Kaiming-normal and take Adam steps with the model in eval mode, maximising

    gain(p_adv) - entropy_weight * sum_words H(w) / entropy_norm

where gain is KL(p_clean || p_adv) summed over the batch (training; RIFT and ASCC) or the cross-entropy
of the true label (the white-box attack). The entropy term pulls each w towards one real word. The
weights come back detached.

Deviation (docs/rift.md): RIFT's E is the embedding *output* (word + position + segment, then
LayerNorm). With Hugging Face `inputs_embeds` only the word embedding can be replaced, so the hull mixes
word embeddings and the model adds position/segment embeddings and LayerNorm afterwards. Position and
segment terms are identical across a position's candidates and the weights sum to one, so the only
difference is LayerNorm(mix) instead of mix(LayerNorm). This is what makes the adversary work on any
encoder and on IM models unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from robustft.adversary.candidates import CandidateTable
from robustft.adversary.embeds import forward_embeds
from robustft.errors import ConfigError
from robustft.models.im import adversary_gradients

MASKED_LOGIT = -500.0


@dataclass(frozen=True)
class HullSettings:
    steps: int = 10
    lr: float = 1.0
    weight_decay: float = 2e-5
    entropy_weight: float = 15.0
    # What the summed entropy of the weights is divided by: a number (RIFT's release: its max length x
    # batch constant, 300 * 128); "tokens": the batch's B x L token positions, padding included
    # (TextDefender's ASCC, a mean over every position); "words" (or None): the number of words that can
    # move (a per-word mean: 3.5x (IMDB) to 8.5x (SST-2) stronger than "tokens").
    entropy_norm: float | str | None = 300 * 128
    # The model's mode during the search: eval (RIFT's release) or its current mode (TextDefender's ASCC,
    # dropout on in training).
    eval_mode: bool = True
    # Examples per forward of the search (None: the whole batch). The objective is a sum of per-example terms (the
    # gain sums over examples, the entropy normaliser is taken from the whole batch) and Adam is elementwise, so
    # chunks find the same weights with a fraction of the memory: what lets the exact IM gradient, which keeps
    # every solver iterate of a forward, run RIFT's batch of 120. In eval mode the result does not depend on it
    # (up to float rounding); in training mode the chunks draw different dropout masks.
    chunk: int | None = None

    def __post_init__(self):
        norm = self.entropy_norm
        if (
            isinstance(norm, str)
            and norm not in ("tokens", "words")
            or (isinstance(norm, int | float) and not isinstance(norm, bool) and norm <= 0)
        ):
            raise ConfigError(f"entropy_norm must be a positive number, 'tokens' or 'words', not {norm!r}")
        chunk = self.chunk
        if chunk is not None and (isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1):
            raise ConfigError(f"the hull search's chunk must be a positive number of examples or None, not {chunk!r}")


def masked_weights(logits: torch.Tensor, slot_mask: torch.Tensor) -> torch.Tensor:
    """Softmax over a word's slots with padded slots at -500: weights on the simplex, zero on padding."""
    return torch.softmax(logits.float().masked_fill(~slot_mask, MASKED_LOGIT), dim=-1)


def weight_entropy(weights: torch.Tensor, slot_mask: torch.Tensor) -> torch.Tensor:
    """Sum over words of H(w); padded slots contribute exactly zero."""
    plogp = weights * torch.log(weights.clamp_min(1e-30))
    return -(plogp.masked_fill(~slot_mask, 0.0)).sum()


def candidate_embeddings(model, table: CandidateTable) -> torch.Tensor:
    """E(c_ik) for every position and slot: [B, L, K, H] word embeddings."""
    return model.get_input_embeddings()(table.ids)


def mix(cand_embeds: torch.Tensor, table: CandidateTable, weights: torch.Tensor) -> torch.Tensor:
    """The hull point: each position takes its word's weights; fixed positions keep slot 0 (the clean token)."""
    b, length, k, _ = cand_embeds.shape
    index = table.word_of.clamp_min(0).unsqueeze(-1).expand(b, length, k)
    per_position = torch.gather(weights, 1, index)
    clean = torch.zeros_like(per_position)
    clean[..., 0] = 1.0
    per_position = torch.where((table.word_of >= 0).unsqueeze(-1), per_position, clean)
    return (per_position.unsqueeze(-1).to(cand_embeds.dtype) * cand_embeds).sum(2)


# A gain maps the adversarial logits of the batch's `rows` (a slice: the search may run in chunks) to a number.
Gain = Callable[[torch.Tensor, slice], torch.Tensor]


def kl_gain(clean_logits: torch.Tensor) -> Gain:
    """Training adversary's gain: KL(p_clean || p_adv), summed over the batch (clean side fixed)."""
    p_clean = torch.softmax(clean_logits.detach().float(), dim=-1)

    def gain(adv_logits, rows=slice(None)):
        return F.kl_div(F.log_softmax(adv_logits.float(), dim=-1), p_clean[rows], reduction="sum")

    return gain


def ce_gain(labels: torch.Tensor) -> Gain:
    """White-box attack's gain: the cross-entropy of the true label (the attack minimises -CE)."""

    def gain(adv_logits, rows=slice(None)):
        return F.cross_entropy(adv_logits.float(), labels[rows], reduction="sum")

    return gain


def kaiming_logits(shape: tuple[int, ...], generator: torch.Generator | None = None) -> torch.Tensor:
    """kaiming_normal_ on a [B, W, K, 1] tensor, i.e. N(0, 2 / (W * K)), W the perturbable words. Deviation: the
    RIFT release draws on [B, L, K, 1], L its padded length (80 on SNLI), a smaller start (std 0.05 there against
    about 0.1-0.3 here); its first Adam step (lr 1) moves every logit by about 1 either way."""
    std = (2.0 / (shape[1] * shape[2])) ** 0.5
    return torch.randn(*shape, generator=generator) * std


def optimise_weights(
    model,
    batch: dict,
    table: CandidateTable,
    gain: Gain,
    settings: HullSettings = HullSettings(),
    init: torch.Tensor | None = None,
    im_gradients: str = "exact",
) -> torch.Tensor:
    """Run the hull search; returns the detached weights [B, W, K] (on the simplex, zero on padded slots).

    `init` gives the starting logits (the attack seeds each example on its own); default Kaiming-normal.
    `im_gradients`: "exact" (default, for attacks) differentiates IM layers through their K steps
    (`robustft.models.im.exact_gradients`); "model" keeps the model's own, cheaper surrogate gradient.
    """
    was_training = model.training
    if settings.eval_mode:
        model.eval()
    try:
        with adversary_gradients(model, im_gradients):
            return _search(model, batch, table, gain, settings, init)
    finally:
        model.train(was_training)


def _search(model, batch, table, gain, settings, init) -> torch.Tensor:
    with torch.no_grad():
        cand = candidate_embeddings(model, table)
    if init is None:
        init = kaiming_logits(tuple(table.slot_mask.shape))
    logits = init.detach().clone().float().to(cand.device).requires_grad_()
    optimizer = torch.optim.Adam([logits], lr=settings.lr, weight_decay=settings.weight_decay)
    norm = entropy_normaliser(settings.entropy_norm, table)  # of the whole batch, whatever the chunks
    size = len(logits)
    step = settings.chunk or size
    chunks = [slice(start, start + step) for start in range(0, size, step)]
    for _ in range(settings.steps):
        grad = torch.empty_like(logits)
        for rows in chunks:
            part = logits[rows].detach().requires_grad_()
            mask = table.slot_mask[rows]
            with torch.enable_grad():
                weights = masked_weights(part, mask)
                embeds = mix(cand[rows], _rows_of_table(table, rows), weights)
                adv_logits = forward_embeds(model, _rows_of_batch(batch, rows, size), embeds)
                objective = gain(adv_logits, rows) - settings.entropy_weight * weight_entropy(weights, mask) / norm
                (grad[rows],) = torch.autograd.grad(-objective, part)
        optimizer.zero_grad(set_to_none=True)
        logits.grad = grad
        optimizer.step()
    return masked_weights(logits.detach(), table.slot_mask)


def _rows_of_table(table: CandidateTable, rows: slice) -> CandidateTable:
    return CandidateTable(table.ids[rows], table.word_of[rows], table.slot_mask[rows])


def _rows_of_batch(batch: dict, rows: slice, size: int) -> dict:
    return {k: v[rows] if isinstance(v, torch.Tensor) and v.dim() and len(v) == size else v for k, v in batch.items()}


def entropy_normaliser(entropy_norm, table: CandidateTable) -> float:
    """The number the summed weight entropy is divided by (see HullSettings.entropy_norm)."""
    if entropy_norm == "tokens":
        return float(table.word_of.numel())  # batch x padded length, as TextDefender's mean over positions
    if entropy_norm in ("words", None):
        return float(max(1, int((table.slot_mask.sum(-1) > 1).sum())))  # words that can move
    return float(entropy_norm)


def adversarial_embeddings(model, table: CandidateTable, weights: torch.Tensor) -> torch.Tensor:
    """The hull point for training: gradients reach the embedding table, not the (detached) weights."""
    return mix(candidate_embeddings(model, table), table, weights.detach())
