"""SAFER (Ye, Gong and Liu, ACL 2020), as TextDefender runs it (trainer/safer.py, utils/safer.py, its ensemble
wrapper): train on inputs whose words are replaced at random from their perturbation sets, predict by an ensemble of
100 randomly substituted copies.

Deviations (printed in config.json, docs/defenses.md): the perturbation set is the counter-fitted 8-neighbour file
(TextDefender and SAFER's release: up to 100 / 800 neighbours in a PCA'd embedding space with similarity >= 0.8 /
0.7, not offline), applied to one-token words of the sub-word vocabulary. The noise, the ensemble and the
certificate are the defense's (`robustft.defenses.safer`); this is only the loss.
"""

from __future__ import annotations

from robustft.defenses.settings import EnsembleSettings
from robustft.training.objectives.ensemble import EnsembleObjective, noisy_cross_entropy
from robustft.training.objectives.textdefender import textdefender_training

DEVIATIONS = [
    "SAFER: perturbation sets are the counter-fitted 8-neighbour file (TextDefender: up to 100 PCA-embedding "
    "neighbours), on one-token words of the sub-word vocabulary"
]


class SAFER(EnsembleObjective):
    name = "safer"
    copies = 100

    def __init__(self, copies: int = copies, vote: str = "logits", seed: int = 0, chunk: int = 32):
        super().__init__(EnsembleSettings("safer", copies=copies, vote=vote, seed=seed, chunk=chunk))

    @classmethod
    def preset(cls, task):
        # TextDefender: its training recipe; ensemble_num 100, ensemble_method 'logits' (args.py)
        return {**textdefender_training(task), "method_args": {"copies": 100, "vote": "logits"}}

    @classmethod
    def deviations(cls, cfg) -> list[str]:
        return list(DEVIATIONS)

    def loss(self, model, batch):
        return noisy_cross_entropy(model, batch, self.defense.training_copy(batch))
