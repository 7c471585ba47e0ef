"""DNE, the Dirichlet neighbourhood ensemble (Zhou et al., ACL 2021), as TextDefender trains and runs it
(trainer/dne.py, utils/dne_utils.py, its ensemble wrapper): the loss at a Dirichlet sample of each word's
neighbourhood hull plus the loss after each of 3 ascent steps on the weights (`robustft.adversary.dne`), and
prediction by an ensemble of 12 Dirichlet samples.

TextDefender's settings: 50 neighbours (first and second order), alpha 1.0 and decay 0.5 (AG News; its defaults),
0.1 and 0.1 for IMDB; 3 ascent steps of size 10. Deviations (docs/defenses.md): counter-fitted neighbours of
one-token words (TextDefender: the same file over BERT's vocabulary, so the same idea), padded slots masked.
"""

from __future__ import annotations

import torch.nn.functional as F

from robustft.adversary import dne
from robustft.defenses.settings import EnsembleSettings
from robustft.models.im import adversary_gradients
from robustft.training.objectives.base import ABOVE_0, AT_LEAST_0, AT_LEAST_1
from robustft.training.objectives.embedding import check_adversary_grad
from robustft.training.objectives.ensemble import EnsembleObjective
from robustft.training.objectives.textdefender import textdefender_training

# TextDefender's trainer/dne.py comments: "0.1 for imdb; 1.0 for agnews" (alpha), "0.1 for imdb; 0.5 for agnews"
DIRICHLET = {"imdb": (0.1, 0.1)}
DEFAULT_DIRICHLET = (1.0, 0.5)
DEVIATIONS = [
    "DNE: hulls over counter-fitted neighbours of one-token words; padded neighbour slots masked out of the "
    "weights (TextDefender keeps them at weight 1e-6)"
]


class DNE(EnsembleObjective):
    name = "dne"
    arg_bounds = {
        **EnsembleObjective.arg_bounds,
        "alpha": ABOVE_0,
        "decay": ABOVE_0,
        "neighbours": AT_LEAST_1,
        "steps": AT_LEAST_0,
    }
    default_steps, copies = 3, 12

    def __init__(
        self,
        alpha: float = 1.0,
        decay: float = 0.5,
        neighbours: int = 50,
        steps: int = default_steps,
        step_size: float = 10.0,
        copies: int = copies,
        vote: str = "logits",
        seed: int = 0,
        chunk: int = 32,
        im_adversary_grad: str = "exact",
    ):
        check_adversary_grad(im_adversary_grad)
        # as in FreeLB, the ascent and the training loss share each forward: "exact" makes both gradients exact
        self.im_adversary_grad = im_adversary_grad
        self.dne = dne.DNESettings(alpha, decay, neighbours, steps, step_size)
        settings = EnsembleSettings(
            "dne", copies=copies, vote=vote, alpha=alpha, decay=decay, neighbours=neighbours, seed=seed, chunk=chunk
        )
        super().__init__(settings)

    @classmethod
    def preset(cls, task):
        alpha, decay = DIRICHLET.get(task, DEFAULT_DIRICHLET)
        return {
            **textdefender_training(task),
            "method_args": {"alpha": alpha, "decay": decay, "neighbours": 50, "steps": 3, "step_size": 10.0},
        }

    @classmethod
    def deviations(cls, cfg) -> list[str]:
        return list(DEVIATIONS)

    def loss(self, model, batch):
        labels = batch["labels"]
        with adversary_gradients(model, self.im_adversary_grad):
            parts = dne.losses(
                model,
                batch,
                self.defense.table_on(batch["input_ids"].device),
                self.defense.words(batch["input_ids"], batch["attention_mask"]),
                self.dne,
                lambda logits: F.cross_entropy(logits.float(), labels),
            )
        # TextDefender back-propagates each of these losses before one optimizer step: their sum
        return sum(parts), {"ce_sample": parts[0].item(), "ce_ascent": parts[-1].item()}
