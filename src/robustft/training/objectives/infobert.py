"""InfoBERT (Wang et al., ICLR 2021; code AI-secure/InfoBERT), as TextDefender runs it.

FreeLB-style steps on the word embeddings (`robustft.adversary.embedding_delta.free_steps`); at each of
the K steps, with e = the embedding layer's output (hidden_states[0]) at embeddings + delta:

    step loss = (CE + beta * IB(e)) / K  -  alpha * AF(e, grad_delta) / K

- IB, the information-bottleneck regulariser, is the released upper bound on I(X; T) (`CLUBv2`, the
  version both released codes run): over the real tokens' embeddings e_i, the mean of
  sum_d (e_i - e_pi(i))^2 / 2 for a random re-draw pi (with replacement). It is part of what the
  adversary ascends.
- AF, the anchored-feature regulariser, is an InfoNCE lower bound on I(local anchored feature; sentence
  feature): per example, the token positions whose delta-gradient norm ranks between the cl and ch
  quantiles (0.5-0.9: useful but not the most vulnerable tokens) give local features e_i, paired with the
  example's last-layer [CLS] state; the pairs are shuffled and scored in chunks of the batch size by a
  trainable critic F(x, y) = Softplus(MLP([x; y])) (hidden 300):
  AF = mean_i F(x_i, y_i) - (mean_i logsumexp_j F(x_j, y_i) - log n). The ascent does not see it.

TextDefender's settings (defaults here): 3 steps, step size 4e-2, init 8e-2, L2, no norm bound,
alpha = beta = 5e-3, cl 0.5, ch 0.9. Deviations: the critic is trained with the model (it is in
`modules()`, as in InfoBERT's own trainer; TextDefender's optimizer may not hold it), and the pairs are
shuffled with the global (seeded) generator instead of a fixed random state per batch.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from robustft.adversary.embedding_delta import ACCUMULATE_MODES, DeltaSettings, free_steps
from robustft.errors import ConfigError
from robustft.training.objectives.embedding import EmbeddingObjective
from robustft.training.objectives.textdefender import textdefender_training


class InfoNCECritic(nn.Module):
    """F(x, y) = Softplus(Linear(ReLU(Linear([x; y])))) and the InfoNCE lower bound it gives."""

    def __init__(self, x_dim: int, y_dim: int, hidden: int = 300):
        super().__init__()
        self.score = nn.Sequential(nn.Linear(x_dim + y_dim, hidden), nn.ReLU(), nn.Linear(hidden, 1), nn.Softplus())

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        n = len(x)
        positive = self.score(torch.cat([x, y], dim=-1)).mean()
        # all[i, j] = F(x_j, y_i): every local feature against sentence i
        pairs = torch.cat([x.unsqueeze(0).expand(n, -1, -1), y.unsqueeze(1).expand(-1, n, -1)], dim=-1)
        scores = self.score(pairs).squeeze(-1)
        return positive - (scores.logsumexp(dim=1).mean() - math.log(n))


def information_bottleneck(embeds: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """The released upper bound (CLUBv2): mean over real tokens of |e_i - e_pi(i)|^2 / 2, pi drawn with replacement."""
    tokens = embeds[attention_mask.bool()].float()
    other = tokens[torch.randint(len(tokens), (len(tokens),), device=tokens.device)]
    return ((tokens - other) ** 2 / 2).sum(-1).mean()


def anchored_positions(delta_grad: torch.Tensor, attention_mask: torch.Tensor, cl: float, ch: float) -> list[list[int]]:
    """Per example, the real-token positions whose gradient norm ranks in [ceil(n*cl), ceil(n*ch)) ascending."""
    norms = delta_grad.float().norm(dim=-1)
    out = []
    for row, n in enumerate(attention_mask.sum(1).tolist()):
        order = torch.argsort(norms[row, :n], stable=True).tolist()
        out.append(order[math.ceil(n * cl) : math.ceil(n * ch)])
    return out


class InfoBERT(EmbeddingObjective):
    name = "infobert"
    default_steps = 3

    def __init__(
        self,
        steps: int = default_steps,
        step_size: float = 4e-2,
        init_mag: float = 8e-2,
        max_norm: float = 0.0,
        norm: str = "l2",
        alpha: float = 5e-3,
        beta: float = 5e-3,
        cl: float = 0.5,
        ch: float = 0.9,
        critic_hidden: int = 300,
        scope: str = "all",
        accumulate: str = "grads",
        im_adversary_grad: str = "exact",
    ):
        super().__init__(scope, im_adversary_grad)
        if not 0 <= cl <= ch <= 1:
            raise ConfigError(f"InfoBERT needs 0 <= cl <= ch <= 1, got cl={cl}, ch={ch}")
        if accumulate not in ACCUMULATE_MODES:
            raise ConfigError(f"accumulate must be one of {', '.join(ACCUMULATE_MODES)}, not {accumulate!r}")
        self.settings = DeltaSettings(steps, step_size, init_mag, max_norm, norm)
        self.alpha, self.beta, self.cl, self.ch = alpha, beta, cl, ch
        self.critic_hidden, self.accumulate = critic_hidden, accumulate
        self.critic: InfoNCECritic | None = None

    @classmethod
    def preset(cls, task):
        # TextDefender's InfoBERT settings (Li et al. 2021) and recipe; the IM gradient choice is ours, recorded
        return {
            **textdefender_training(task),
            "method_args": {
                "steps": 3,
                "step_size": 4e-2,
                "init_mag": 8e-2,
                "max_norm": 0.0,
                "alpha": 5e-3,
                "beta": 5e-3,
                "cl": 0.5,
                "ch": 0.9,
                "im_adversary_grad": "exact",
            },
        }

    def setup(self, model, ctx) -> None:
        super().setup(model, ctx)
        hidden = model.config.hidden_size
        self.critic = InfoNCECritic(hidden, hidden, self.critic_hidden).to(ctx.device)

    def modules(self):
        return {"infonce_critic": self.critic} if self.critic is not None else {}

    def loss(self, model, batch):
        if self.critic is None:
            raise ConfigError("method 'infobert' needs setup() (its InfoNCE critic) before the first batch")
        labels, mask, k = batch["labels"], batch["attention_mask"], self.settings.steps
        logs = {"ce": 0.0, "ib": 0.0, "af": 0.0}

        def step_loss(output, delta):
            ce = F.cross_entropy(output.logits.float(), labels)
            ib = information_bottleneck(output.hidden_states[0], mask)
            logs["ce"] += ce.item() / k
            logs["ib"] += ib.item() / k
            return (ce + self.beta * ib) / k

        def anchored(output, delta_grad):
            af = self.anchored_features(output, delta_grad, mask)
            logs["af"] += af.item() / k
            return -self.alpha * af / k

        params = [*model.parameters(), *self.critic.parameters()]
        losses, delta = free_steps(
            model,
            batch,
            self.perturb_mask(batch),
            step_loss,
            self.settings,
            self.im_adversary_grad,
            self.accumulate,
            params=params,
            extra=anchored,
        )
        logs["delta_norm"] = delta.flatten(1).norm(dim=1).mean().item()
        return sum(losses), logs

    def anchored_features(self, output, delta_grad, attention_mask) -> torch.Tensor:
        """The InfoNCE bound between anchored local features and the [CLS] state, over shuffled chunks."""
        embeds, sentence = output.hidden_states[0], output.hidden_states[-1][:, 0]
        positions = anchored_positions(delta_grad, attention_mask, self.cl, self.ch)
        rows = torch.tensor([r for r, ps in enumerate(positions) for _ in ps], dtype=torch.long)
        cols = torch.tensor([p for ps in positions for p in ps], dtype=torch.long)
        if len(rows) == 0:
            return embeds.sum() * 0.0
        order = torch.randperm(len(rows))
        rows, cols = rows[order].to(embeds.device), cols[order].to(embeds.device)
        local, whole = embeds[rows, cols].float(), sentence[rows].float()
        size = len(attention_mask)
        bounds = [self.critic(local[i : i + size], whole[i : i + size]) for i in range(0, len(rows), size)]
        return torch.stack(bounds).mean()
