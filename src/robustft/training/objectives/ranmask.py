"""RanMASK (Zeng et al. 2021/2023), as TextDefender runs it (trainer/mask.py, utils/mask.py, its ensemble wrapper):
train on inputs with a share of their words (rate 0.9, at least 2 words kept) replaced by the mask token, predict by
an ensemble of 100 randomly masked copies.

Deviations (docs/defenses.md): words are the tokenizer's words (punctuation is a word; TextDefender splits on
whitespace); a masked word becomes one mask token however many pieces it has, as in TextDefender. TextDefender's
ensemble masks at rate 0.7 (utils/augmentor.py) while training at 0.9; here the ensemble uses the training rate
unless `predict_rate` says otherwise, as in the RanMASK paper. The masking, the ensemble and the certificate are the
defense's (`robustft.defenses.ranmask`); this is only the loss.
"""

from __future__ import annotations

import dataclasses

from robustft.defenses.settings import EnsembleSettings
from robustft.errors import ConfigError
from robustft.training.objectives.base import AT_LEAST_0
from robustft.training.objectives.ensemble import SHARE_BELOW_1, EnsembleObjective, noisy_cross_entropy
from robustft.training.objectives.textdefender import textdefender_training

DEVIATIONS = [
    "RanMASK: words are the tokenizer's words (punctuation a word of its own; TextDefender masks whitespace words "
    "before tokenising); a masked word is one mask token, as there"
]


class RanMASK(EnsembleObjective):
    name = "ranmask"
    arg_bounds = {
        **EnsembleObjective.arg_bounds,
        "rate": SHARE_BELOW_1,
        "predict_rate": SHARE_BELOW_1,
        "min_keep": AT_LEAST_0,
    }
    copies = 100

    def __init__(
        self,
        rate: float = 0.9,
        min_keep: int = 2,
        copies: int = copies,
        vote: str = "logits",
        predict_rate: float | None = None,
        seed: int = 0,
        chunk: int = 32,
    ):
        if rate >= 1.0 or (predict_rate is not None and predict_rate >= 1.0):
            raise ConfigError(f"RanMASK's mask rate must be below 1, not {rate} / {predict_rate}")
        wanted = rate if predict_rate is None else predict_rate
        super().__init__(
            EnsembleSettings(
                "ranmask", copies=copies, vote=vote, rate=wanted, min_keep=min_keep, seed=seed, chunk=chunk
            )
        )
        self.rate, self.min_keep = rate, min_keep

    @classmethod
    def preset(cls, task):
        # TextDefender: --mask-rate 0.9 (mask_sentence keeps min_keep=2 words), ensemble_num 100, 'logits'
        return {
            **textdefender_training(task),
            "method_args": {"rate": 0.9, "min_keep": 2, "copies": 100, "vote": "logits"},
        }

    @classmethod
    def deviations(cls, cfg) -> list[str]:
        out = list(DEVIATIONS)
        if cfg.method_args.get("predict_rate") is not None:
            out.append(f"RanMASK: the ensemble masks at rate {cfg.method_args['predict_rate']} (trained at another)")
        return out

    def setup(self, model, ctx) -> None:
        super().setup(model, ctx)
        # the ensemble may predict at another rate (predict_rate); training masks at `rate`
        self.train_noise = self.defense.with_settings(dataclasses.replace(self.settings, rate=self.rate))

    def loss(self, model, batch):
        return noisy_cross_entropy(model, batch, self.train_noise.training_copy(batch))
