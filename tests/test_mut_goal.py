"""The untargeted goal (attacks/goal.py) on a stub victim whose probabilities are fixed by hand: score = 1 - p(true),
success = the argmax is not the true label, a spent budget ends the search and cuts the results short. Written
to kill the mutants `make mutation` left alive (docs/testing.md)."""

import numpy as np
import pytest

from robustft.attacks.goal import GoalResult, UntargetedClassification
from robustft.attacks.view import TextView
from robustft.attacks.words import AttackedText
from robustft.data.example import Example

TABLE = {  # text -> class probabilities (3 classes; the true label is 2)
    "keep": [0.1, 0.2, 0.7],
    "flip": [0.6, 0.1, 0.3],
    "tie": [0.45, 0.1, 0.45],  # argmax picks the first maximum, class 0: a success
}


class StubVictim:
    """Answers from TABLE; stops answering after `budget` texts and then says it is exhausted."""

    def __init__(self, budget=100):
        self.budget, self.asked = budget, []

    @property
    def exhausted(self):
        return len(self.asked) >= self.budget

    def probs(self, examples):
        room = max(self.budget - len(self.asked), 0)
        examples = examples[:room]
        self.asked += [e.text_a for e in examples]
        return np.array([TABLE[e.text_a] for e in examples]).reshape(len(examples), 3)


def _goal(budget=100, label=2):
    return UntargetedClassification(StubVictim(budget), TextView.of(Example("keep", label), "text_a"))


def test_scores_are_one_minus_the_true_class_probability():
    goal = _goal()
    np.testing.assert_allclose(goal.scores_of_strings(["keep", "flip", "tie"]), [0.3, 0.7, 0.55])
    np.testing.assert_allclose(goal.probs_of_strings(["flip"]), [TABLE["flip"]])
    assert goal.victim.asked == ["keep", "flip", "tie", "flip"]  # every text went through the victim, as an Example


def test_scores_follow_the_true_label():
    goal = _goal(label=0)
    assert goal.label == 0
    np.testing.assert_allclose(goal.scores_of_strings(["keep", "flip"]), [0.9, 0.4])


def test_evaluate_gives_score_success_and_prediction_in_order():
    results = _goal().evaluate([AttackedText("keep"), AttackedText("flip"), AttackedText("tie")])
    assert [r.text.text for r in results] == ["keep", "flip", "tie"]
    assert [r.score for r in results] == pytest.approx([0.3, 0.7, 0.55])
    assert [r.succeeded for r in results] == [False, True, True]
    assert [r.pred for r in results] == [2, 0, 0]
    assert all(isinstance(r.score, float) for r in results)
    np.testing.assert_allclose(results[1].probs, TABLE["flip"])


def test_a_spent_budget_cuts_the_results_short_and_ends_the_search():
    goal = _goal(budget=2)
    assert not goal.search_over
    results = goal.evaluate([AttackedText("flip"), AttackedText("keep"), AttackedText("tie")])
    assert [r.text.text for r in results] == ["flip", "keep"] and goal.search_over


def test_pred_is_the_argmax():
    assert GoalResult(AttackedText("x"), np.array([0.2, 0.5, 0.3]), 0.5, True).pred == 1
