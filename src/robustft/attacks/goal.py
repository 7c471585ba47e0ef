"""Goal functions: untargeted classification (flip the prediction away from the true label), or targeted (reach
one class; TargetedClassification: score = p(target)).

score = 1 - p(true label): higher is better for the attacker; an input succeeds when the predicted
class is not the true label. All evaluations go through the victim, so they are batched, cached,
counted and stopped by the query budget.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from robustft.attacks.victim import Victim
from robustft.attacks.view import TextView
from robustft.attacks.words import AttackedText


@dataclass(frozen=True)
class GoalResult:
    text: AttackedText
    probs: np.ndarray
    score: float
    succeeded: bool

    @property
    def pred(self) -> int:
        return int(self.probs.argmax())


class UntargetedClassification:
    def __init__(self, victim: Victim, view: TextView):
        self.victim, self.view = victim, view
        self.label = view.example.label

    @property
    def search_over(self) -> bool:
        """True once the query budget is spent: searches stop and keep their best result so far."""
        return self.victim.exhausted

    def probs_of_strings(self, texts: list[str]) -> np.ndarray:
        return self.victim.probs([self.view.to_example(t) for t in texts])

    def scores_of_strings(self, texts: list[str]) -> np.ndarray:
        return 1.0 - self.probs_of_strings(texts)[:, self.label]

    def evaluate(self, texts: list[AttackedText]) -> list[GoalResult]:
        """Results for the texts, in order; fewer than asked when the budget ran out."""
        probs = self.probs_of_strings([t.text for t in texts])
        return [
            GoalResult(t, p, float(1.0 - p[self.label]), int(p.argmax()) != self.label)
            for t, p in zip(texts, probs, strict=False)
        ]


class TargetedClassification(UntargetedClassification):
    """Succeeds when the model predicts `target`; score = p(target). Composed as partial(TargetedClassification,
    target=k)."""

    def __init__(self, victim: Victim, view: TextView, target: int):
        super().__init__(victim, view)
        self.target = target

    def evaluate(self, texts: list[AttackedText]) -> list[GoalResult]:
        probs = self.probs_of_strings([t.text for t in texts])
        pairs = zip(texts, probs, strict=False)  # fewer probs when the budget ran out
        return [GoalResult(t, p, float(p[self.target]), int(p.argmax()) == self.target) for t, p in pairs]

    def scores_of_strings(self, texts: list[str]) -> np.ndarray:
        return self.probs_of_strings(texts)[:, self.target]
