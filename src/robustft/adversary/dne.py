"""The Dirichlet neighbourhood ensemble adversary (DNE; Zhou et al., ACL 2021), as TextDefender trains it
(trainer/dne.py, utils/dne_utils.py): the sampled cousin of ASCC's convex hull (`robustft.adversary.hull`).

Every whole-word token's embedding is replaced by a convex combination of the embeddings of the token, its
counter-fitted neighbours and their neighbours (`smoothing.neighbour_table(second_order=True)`, at most 50 with the
token), with Dirichlet weights: concentration alpha on the token and its first-order neighbours, alpha * decay on
the second-order ones. The weights' logits `z = log(w + 1e-6)` then take `steps` ascent steps of the loss,
`z <- z + step_size * g / (|g| + 1e-6)` with g the gradient w.r.t. z, normalised over each token's neighbours.
TextDefender back-propagates the loss at the sample and after every step into the model (its gradients accumulate
before one optimizer step): `losses` returns all of them, and the objective sums them.

Deviation: TextDefender pads each token's neighbour list with the [PAD] token at weight 1e-6, which the ascent may
raise; here padded slots are masked out of the softmax (-inf), so the hull holds real neighbours only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from robustft.adversary import smoothing
from robustft.adversary.embeds import forward_embeds
from robustft.errors import ConfigError


@dataclass(frozen=True)
class DNESettings:
    alpha: float = 1.0  # TextDefender --dir_alpha: 1.0 AG News, 0.1 IMDB
    decay: float = 0.5  # --dir_decay: 0.5 AG News, 0.1 IMDB
    neighbours: int = 50  # --nbr_num (the token included)
    steps: int = 3  # --adv_iteration
    step_size: float = 10.0  # --adv_steps

    def __post_init__(self):
        if self.alpha <= 0 or self.decay <= 0:
            raise ConfigError(f"DNE's Dirichlet alpha and decay must be positive, not {self.alpha} and {self.decay}")
        if self.neighbours < 1 or self.steps < 0:
            raise ConfigError(f"DNE needs neighbours >= 1 and steps >= 0, not {self.neighbours} and {self.steps}")


def slot_mask(input_ids: torch.Tensor, words: smoothing.Words, table: smoothing.NeighbourTable) -> torch.Tensor:
    """[B, L, M] the real slots of each token's row: its whole set where the token may move, else only itself."""
    ids = input_ids.clamp(0, table.ids.shape[0] - 1)
    size = torch.where(words.whole, table.size.to(ids.device)[ids], torch.ones_like(ids))
    return torch.arange(table.width, device=ids.device) < size.unsqueeze(-1)


def losses(
    model,
    batch: dict,
    table: smoothing.NeighbourTable,
    words: smoothing.Words,
    settings: DNESettings,
    loss_of: Callable[[torch.Tensor], torch.Tensor],
) -> list[torch.Tensor]:
    """The loss at a Dirichlet sample of the hull, then after each ascent step on the weights' logits
    (`settings.steps + 1` losses, each differentiable w.r.t. the model)."""
    ids = batch["input_ids"]
    sample = smoothing.dirichlet_weights(ids, words, table, settings.alpha, settings.decay).to(ids.device)
    real = slot_mask(ids, words, table)
    logits = torch.log(sample + 1e-6)
    out = []
    for step in range(settings.steps + 1):
        z = (logits - logits.max(-1, keepdim=True).values).detach().requires_grad_(step < settings.steps)
        weights = torch.softmax(z.masked_fill(~real, float("-inf")), dim=-1)
        loss = loss_of(forward_embeds(model, batch, smoothing.mix_rows(model, ids, table, weights)))
        out.append(loss)
        if step < settings.steps:
            (grad,) = torch.autograd.grad(loss, z, retain_graph=True)
            logits = z.detach() + settings.step_size * grad / (grad.norm(dim=-1, keepdim=True) + 1e-6)
    return out
