"""The base of the objectives whose adversary perturbs word embeddings (PGD, FreeLB, FreeLB++, TRADES,
InfoBERT); the adversary itself is `robustft.adversary.embedding_delta`."""

from __future__ import annotations

import torch

from robustft.adversary.embedding_delta import SCOPES, perturbation_mask
from robustft.errors import ConfigError
from robustft.models.im import ADVERSARY_GRAD_MODES
from robustft.training.objectives.base import Objective


class EmbeddingObjective(Objective):
    """Holds the token scope and the IM gradient choice of the inner adversary (method_args.im_adversary_grad)."""

    def __init__(self, scope: str = "all", im_adversary_grad: str = "exact"):
        if scope not in SCOPES:
            raise ConfigError(f"scope must be one of {', '.join(SCOPES)}, not {scope!r}")
        check_adversary_grad(im_adversary_grad)
        self.scope = scope
        self.im_adversary_grad = im_adversary_grad
        self.tokenizer = None
        self.task = None

    def setup(self, model, ctx) -> None:
        self.tokenizer, self.task = ctx.tokenizer, ctx.task

    def perturb_mask(self, batch: dict) -> torch.Tensor:
        return perturbation_mask(batch, self.scope, self.tokenizer, self.task)


def check_adversary_grad(value: str) -> None:
    if value not in ADVERSARY_GRAD_MODES:
        raise ConfigError(f"im_adversary_grad must be one of {', '.join(ADVERSARY_GRAD_MODES)}, not {value!r}")
