"""The verdict rule at its boundaries (an interval touching 0 or the paper's size, two seeds, a zero claim) and the
exact sentences SPEC section 7 asks for: written to kill the mutants `make mutation` left alive (docs/testing.md)."""

import pytest

from robustft.errors import RobustftError
from robustft.evaluation.verdicts import (
    INCONCLUSIVE,
    NO_VERDICT,
    NOT_REPRODUCED,
    REPRODUCED,
    SMALLER,
    JointVerdict,
    Verdict,
    joint_verdict,
    judge_claim,
)

SPREAD = {"seed": 0.015**2, "example": 0.05, "residual": 0.3}


def _result(low, high, n_seeds=3, basis="seeds"):
    return {"difference": (low + high) / 2, "ci95": [low, high], "n_seeds": n_seeds, "n": 300, "basis": basis,
            "spread": SPREAD}  # fmt: skip


def test_an_interval_that_touches_0_does_not_exclude_it():
    assert judge_claim(_result(0.0, 0.1)).status == INCONCLUSIVE
    assert judge_claim(_result(1e-9, 0.1)).status == REPRODUCED


def test_an_interval_whose_top_is_the_papers_size_does_not_rule_it_out():
    assert judge_claim(_result(0.01, 0.083), 0.083).status == REPRODUCED
    assert judge_claim(_result(-0.01, 0.083), 0.083).status == INCONCLUSIVE
    assert judge_claim(_result(-0.01, 0.0829), 0.083).status == NOT_REPRODUCED


def test_a_direction_only_claim_is_ruled_out_only_below_0():
    assert judge_claim(_result(-0.05, 0.0)).status == INCONCLUSIVE
    assert judge_claim(_result(-0.05, -1e-9)).status == NOT_REPRODUCED


def test_the_exact_sentences():
    assert judge_claim(_result(0.02, 0.12), 0.083).sentence == "reproduced: the interval excludes 0"
    assert (
        judge_claim(_result(0.01, 0.05), 0.0834).sentence
        == "smaller than claimed: a gain, but the interval rules out the paper's +8.3"
    )
    assert (
        judge_claim(_result(-0.01, 0.05), 0.12).sentence == "not reproduced: the interval rules out the paper's +12.0"
    )
    assert (
        judge_claim(_result(-0.04, -0.01)).sentence
        == "not reproduced: the interval rules out a gain (the baseline is ahead)"
    )


def test_an_inconclusive_verdict_aims_at_the_claim_it_was_given():
    with_size = judge_claim(_result(-0.03, 0.10), 0.083)
    direction = judge_claim(_result(-0.03, 0.10))
    assert with_size.settle is not None and direction.settle is not None
    assert with_size.sentence == f"inconclusive: {with_size.settle['sentence']}"
    assert direction.settle["aim"] == "0"


def test_a_zero_claim_is_refused_and_a_tiny_positive_one_is_not():
    with pytest.raises(RobustftError, match="claimed effect 0 is not positive"):
        judge_claim(_result(0.0, 0.1), 0)
    assert judge_claim(_result(0.01, 0.1), 1e-6).status == REPRODUCED


def test_two_seeds_are_enough_for_a_verdict_and_a_missing_count_or_basis_is_not():
    assert judge_claim(_result(0.02, 0.12, n_seeds=2)).status == REPRODUCED
    no_count = {k: v for k, v in _result(0.02, 0.12).items() if k != "n_seeds"}
    no_basis = {k: v for k, v in _result(0.02, 0.12).items() if k != "basis"}
    assert judge_claim(no_count).status == NO_VERDICT and judge_claim(no_basis).status == NO_VERDICT
    assert judge_claim(_result(0.02, 0.12, n_seeds=3, basis="examples")).status == NO_VERDICT


def test_no_verdict_names_every_reason_in_order():
    v = judge_claim(_result(0.02, 0.12, n_seeds=1), preset_finished=False, runs_committed=False)
    assert v.sentence == (
        "no verdict: one seed (an interval over examples only says nothing about seeds); the preset is unfinished; "
        "the runs are not committed"
    )
    assert v.settle is None and not v.holds
    assert judge_claim(_result(0.02, 0.12), runs_committed=False).sentence == "no verdict: the runs are not committed"
    assert judge_claim(_result(0.02, 0.12), preset_finished=False).sentence == "no verdict: the preset is unfinished"


@pytest.mark.parametrize(
    ("status", "holds"),
    [(REPRODUCED, True), (SMALLER, True), (NOT_REPRODUCED, False), (INCONCLUSIVE, False), (NO_VERDICT, False)],
)
def test_holds_is_the_claimed_direction_shown(status, holds):
    assert Verdict(status, status).holds is holds
    assert JointVerdict(status, status, ()).holds is holds


def _v(status):
    return Verdict(status, status)


def test_joint_sentences():
    assert joint_verdict({"a": _v(REPRODUCED), "b": _v(REPRODUCED)}).sentence == (
        "reproduced: every one of 2 components holds"
    )
    assert joint_verdict({"a": _v(SMALLER), "b": _v(REPRODUCED), "c": _v(SMALLER)}).sentence == (
        "smaller than claimed: every component is a gain, below the paper's size for a, c"
    )
    unjudged = joint_verdict({"a": _v(NO_VERDICT), "b": _v(INCONCLUSIVE), "c": _v(REPRODUCED)})
    assert unjudged.status == NO_VERDICT and unjudged.failing == ("a", "b")
    assert unjudged.sentence == "no verdict: no verdict for a (every component must hold; 2 of 3 do not)"
    open_ = joint_verdict({"a": _v(INCONCLUSIVE), "b": _v(SMALLER)})
    assert open_.sentence == "inconclusive: not shown for a (every component must hold; 1 of 2 do not)"
    refuted = joint_verdict({"a": _v(NOT_REPRODUCED), "b": _v(NOT_REPRODUCED), "c": _v(REPRODUCED)})
    assert refuted.sentence == "not reproduced: ruled out for a, b" and refuted.failing == ("a", "b")
    mixed = joint_verdict({"a": _v(NOT_REPRODUCED), "b": _v(NO_VERDICT), "c": _v(INCONCLUSIVE)})
    assert mixed.status == NOT_REPRODUCED
    assert mixed.sentence == "not reproduced: ruled out for a; not shown for b, c"


def test_a_joint_verdict_keeps_its_components():
    parts = {"a": _v(REPRODUCED), "b": _v(INCONCLUSIVE)}
    joint = joint_verdict(parts)
    assert joint.components == parts and joint.components is not parts
    assert joint_verdict({"only": _v(SMALLER)}).status == SMALLER


def test_joint_sentences_list_every_component_named():
    both_open = joint_verdict({"a": _v(INCONCLUSIVE), "b": _v(INCONCLUSIVE)})
    assert both_open.sentence == "inconclusive: not shown for a, b (every component must hold; 2 of 2 do not)"
    both_unjudged = joint_verdict({"a": _v(NO_VERDICT), "b": _v(NO_VERDICT)})
    assert both_unjudged.sentence == "no verdict: no verdict for a, b (every component must hold; 2 of 2 do not)"
    with pytest.raises(RobustftError, match="^a joint claim needs at least one component verdict$"):
        joint_verdict({})
