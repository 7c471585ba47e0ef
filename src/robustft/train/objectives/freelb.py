"""FreeLB (Zhu et al. 2020) and FreeLB++ (Li et al. 2021, TextDefender): "free" adversarial training.

Each of K ascent steps on the embedding perturbation also contributes its parameter gradient, and the
update uses their average: grad = (1/K) sum_k grad_theta CE(x + delta_k). Two ways to get that sum:

- accumulate="inside" (default): steps 1..K-1 call backward here, like FreeLB's own code, and the last
  step's loss goes back to the loop; memory of one forward graph. The loop must not zero gradients
  between `loss()` and its backward, and when it scales the loss (gradient accumulation) it sets
  `backward_scale` to the same factor.
- accumulate="graph": keep every step's graph and return their sum; exact under any loop, K graphs of memory.

FreeLB here uses TextDefender's `freelb` defaults (5 steps, step 0.03, init 0.05, L2, no norm bound);
FreeLB++ is the same with 10 steps (TextDefender's IMDB setting; 30 for SST-2 and AG News).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from robustft.adversary.embeds import forward_embeds, word_embeddings
from robustft.errors import ConfigError
from robustft.models.im import adversary_gradients
from robustft.train.objectives.base import register_objective
from robustft.train.objectives.embedding_attack import DeltaSettings, EmbeddingObjective, init_delta, step_delta


@register_objective("freelb")
class FreeLB(EmbeddingObjective):
    default_steps = 5

    def __init__(self, steps: int | None = None, step_size: float = 0.03, init_mag: float = 0.05,
                 max_norm: float = 0.0, norm: str = "l2", scope: str = "all", accumulate: str = "inside",
                 im_adversary_grad: str = "exact"):
        super().__init__(scope, im_adversary_grad)
        if accumulate not in ("inside", "graph"):
            raise ConfigError(f"accumulate must be 'inside' or 'graph', not {accumulate!r}")
        self.settings = DeltaSettings(steps or self.default_steps, step_size, init_mag, max_norm, norm)
        self.accumulate = accumulate
        self.backward_scale = 1.0

    def loss(self, model, batch):
        labels, s = batch["labels"], self.settings
        mask = self.perturb_mask(batch)
        with torch.no_grad():
            delta = init_delta(word_embeddings(model, batch), mask, s)
        kept, done = [], 0.0
        # the ascent's and the parameters' gradients come from the same forward: "exact" makes both exact
        with adversary_gradients(model, self.im_adversary_grad):
            loss_k, delta = self._steps(model, batch, labels, mask, delta, kept)
        total = loss_k + sum(kept) + done
        return total, {"adv_ce": total.item(), "delta_norm": delta.detach().flatten(1).norm(dim=1).mean().item()}

    def _steps(self, model, batch, labels, mask, delta, kept):
        s, done = self.settings, 0.0
        for k in range(s.steps):
            delta.requires_grad_()
            # Re-embed every step: each step's gradient reaches the embedding table, as in FreeLB.
            loss_k = F.cross_entropy(forward_embeds(model, batch, word_embeddings(model, batch) + delta).float(),
                                     labels) / s.steps
            if k == s.steps - 1:
                break
            if self.accumulate == "inside":
                (loss_k * self.backward_scale).backward()
                grad = delta.grad
                done += loss_k.item()
            else:
                (grad,) = torch.autograd.grad(loss_k, delta, retain_graph=True)
                kept.append(loss_k)
            delta = step_delta(delta.detach(), grad, mask, s)
        return loss_k + done, delta


@register_objective("freelbpp")
class FreeLBPlusPlus(FreeLB):
    """FreeLB++: no norm bound and more steps (10: TextDefender's IMDB setting)."""

    default_steps = 10
