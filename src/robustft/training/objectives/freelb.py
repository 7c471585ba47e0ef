"""FreeLB (Zhu et al. 2020) and FreeLB++ (Li et al. 2021, TextDefender): "free" adversarial training.

Each of K ascent steps on the embedding perturbation also contributes its parameter gradient, and the
update uses their average: loss = (1/K) sum_k CE(x + delta_k), returned to the loop, which does the one
backward (`robustft.adversary.embedding_delta.free_steps`). `accumulate` says how the K steps' gradients
are held until then: "grads" (default) takes each earlier step's parameter gradient at once into one
buffer and frees its graph; "graph" keeps the K graphs. Both return the same loss value and the same
gradient (tests/test_objectives.py); measured on MiniLM, IMDB batch 8 x 128 tokens, FreeLB++ 10 steps:
peak +944 MiB for "grads" against +3,745 MiB for "graph" (benchmarks/results/freelb_accumulate_*.json).

FreeLB here uses TextDefender's `freelb` defaults (5 steps, step 0.03, init 0.05, L2, no norm bound);
FreeLB++ is the same with more steps: 10 by default, and through `preset(task)` TextDefender's 10 on
IMDB and 30 on SST-2 and AG News.
"""

from __future__ import annotations

import torch.nn.functional as F

from robustft.adversary.embedding_delta import ACCUMULATE_MODES, DeltaSettings, free_steps
from robustft.errors import ConfigError
from robustft.training.objectives.embedding import EmbeddingObjective
from robustft.training.objectives.textdefender import textdefender_training


class FreeLB(EmbeddingObjective):
    name = "freelb"
    default_steps = 5

    def __init__(
        self,
        steps: int | None = None,
        step_size: float = 0.03,
        init_mag: float = 0.05,
        max_norm: float = 0.0,
        norm: str = "l2",
        scope: str = "all",
        accumulate: str = "grads",
        im_adversary_grad: str = "exact",
    ):
        super().__init__(scope, im_adversary_grad)
        if accumulate not in ACCUMULATE_MODES:
            raise ConfigError(f"accumulate must be one of {', '.join(ACCUMULATE_MODES)}, not {accumulate!r}")
        self.settings = DeltaSettings(steps or self.default_steps, step_size, init_mag, max_norm, norm)
        self.accumulate = accumulate

    @classmethod
    def preset(cls, task):
        # TextDefender's FreeLB settings: step 0.03, init 0.05, no norm bound (5 steps for FreeLB), and its recipe
        return {
            **textdefender_training(task),
            "method_args": {
                "steps": cls.preset_steps(task),
                "step_size": 0.03,
                "init_mag": 0.05,
                "max_norm": 0.0,
                "im_adversary_grad": "exact",
            },
        }

    @classmethod
    def preset_steps(cls, task: str) -> int:
        return cls.default_steps

    def loss(self, model, batch):
        labels, k = batch["labels"], self.settings.steps
        losses, delta = free_steps(
            model,
            batch,
            self.perturb_mask(batch),
            lambda output, _: F.cross_entropy(output.logits.float(), labels) / k,
            self.settings,
            self.im_adversary_grad,
            self.accumulate,
        )
        total = sum(losses)
        return total, {"adv_ce": total.item(), "delta_norm": delta.flatten(1).norm(dim=1).mean().item()}


class FreeLBPlusPlus(FreeLB):
    """FreeLB++: no norm bound and more steps (10 by default: TextDefender's IMDB setting)."""

    name = "freelbpp"

    default_steps = 10
    TEXTDEFENDER_STEPS = {"imdb": 10, "sst2": 30, "ag_news": 30}  # TextDefender (Li et al. 2021)

    @classmethod
    def preset_steps(cls, task: str) -> int:
        return cls.TEXTDEFENDER_STEPS.get(task, cls.default_steps)
