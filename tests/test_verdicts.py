"""The verdict rule for a claim, and joint claims by intersection-union."""

import pytest

from robustft.errors import RobustftError
from robustft.evaluation.intervals import paired_difference_over_seeds
from robustft.evaluation.verdicts import (
    INCONCLUSIVE,
    NO_VERDICT,
    NOT_REPRODUCED,
    REPRODUCED,
    SMALLER,
    Verdict,
    joint_verdict,
    judge_claim,
)

SPREAD = {"seed": 0.015**2, "example": 0.05, "residual": 0.3}


def _result(low, high, n_seeds=3, basis="seeds"):
    return {"difference": (low + high) / 2, "ci95": [low, high], "n_seeds": n_seeds, "n": 300, "basis": basis,
            "spread": SPREAD if basis == "seeds" else None}  # fmt: skip


@pytest.mark.parametrize(
    "ci, claimed, status, words",
    [
        ((0.02, 0.12), 0.083, REPRODUCED, "excludes 0"),
        ((0.01, 0.05), 0.083, SMALLER, "rules out the paper's +8.3"),
        ((-0.03, 0.05), 0.083, NOT_REPRODUCED, "rules out the paper's +8.3"),
        ((-0.03, 0.10), 0.083, INCONCLUSIVE, "would take"),
        ((0.01, 0.03), None, REPRODUCED, "excludes 0"),
        ((-0.04, -0.01), None, NOT_REPRODUCED, "rules out a gain"),
        ((-0.04, 0.01), None, INCONCLUSIVE, "excluding 0 would take"),
    ],
)
def test_a_claim_is_judged_by_where_the_seed_counting_interval_lies(ci, claimed, status, words):
    verdict = judge_claim(_result(*ci), claimed)
    assert verdict.status == status and words in verdict.sentence and verdict.sentence.startswith(status)
    assert verdict.holds == (status in (REPRODUCED, SMALLER))


def test_an_inconclusive_verdict_says_what_would_settle_it():
    verdict = judge_claim(_result(-0.03, 0.10), 0.083)
    assert verdict.settle["aim"] in ("0", "+8.3")
    assert verdict.settle["seeds"] > 3 and verdict.settle["examples_per_seed"] > 300
    assert f"about {verdict.settle['seeds']} seeds of 300 examples" in verdict.sentence


def test_issue_53_im_bert_advglue_is_inconclusive_not_ruled_out():
    n = 500  # the per-seed differences +5.0, -3.8, +3.4 that were reported as "rules out +8.3"
    rows = [[1.0] * (w + 60) + [-1.0] * 60 + [0.0] * (n - w - 120) for w in (25, -19, 17)]
    verdict = judge_claim(paired_difference_over_seeds(rows), 0.083)
    assert verdict.status == INCONCLUSIVE


def test_no_verdict_from_one_seed_an_unfinished_preset_or_uncommitted_runs_and_each_reason_is_named():
    one_seed = judge_claim(_result(0.02, 0.12, n_seeds=1, basis="examples"), 0.083)
    assert one_seed.status == NO_VERDICT and "one seed" in one_seed.sentence and not one_seed.holds
    unfinished = judge_claim(_result(0.02, 0.12), 0.083, preset_finished=False, runs_committed=False)
    assert unfinished.status == NO_VERDICT
    assert "preset is unfinished" in unfinished.sentence and "not committed" in unfinished.sentence


def test_a_claim_must_be_oriented_positive():
    with pytest.raises(RobustftError, match="orient the comparison"):
        judge_claim(_result(0.0, 0.1), -0.05)


def _v(status):
    return Verdict(status, status)


def test_a_joint_claim_holds_only_if_every_component_holds_and_names_the_ones_that_fail():
    every = {"pgd/pwws": _v(REPRODUCED), "pgd/genetic": _v(REPRODUCED), "trades/pwws": _v(REPRODUCED)}
    assert joint_verdict(every).status == REPRODUCED and joint_verdict(every).failing == ()
    one_open = {**every, "trades/genetic": _v(INCONCLUSIVE)}
    joint = joint_verdict(one_open)
    assert joint.status == INCONCLUSIVE and joint.failing == ("trades/genetic",) and "trades/genetic" in joint.sentence
    assert "1 of 4" in joint.sentence and not joint.holds


def test_one_refuted_component_refutes_the_joint_claim():
    joint = joint_verdict({"pgd/pwws": _v(NOT_REPRODUCED), "pgd/genetic": _v(INCONCLUSIVE), "a": _v(REPRODUCED)})
    assert joint.status == NOT_REPRODUCED and joint.failing == ("pgd/pwws", "pgd/genetic")
    assert "ruled out for pgd/pwws" in joint.sentence and "not shown for pgd/genetic" in joint.sentence


def test_a_joint_claim_with_an_unjudged_component_gets_no_verdict_and_smaller_components_are_named():
    assert joint_verdict({"a": _v(REPRODUCED), "b": _v(NO_VERDICT)}).status == NO_VERDICT
    smaller = joint_verdict({"a": _v(REPRODUCED), "b": _v(SMALLER)})
    assert smaller.status == SMALLER and smaller.holds and smaller.sentence.endswith("for b")
    with pytest.raises(RobustftError, match="at least one component"):
        joint_verdict({})


def test_a_matched_clean_interval_gets_a_verdict_and_a_projection():
    # the frontier's difference is a paired seeds x examples table (evaluation.frontier), so an open one gets the
    # same projection as any paired difference
    from robustft.evaluation.frontier import FrontierPoint, matched_clean_difference

    def right(n: int, k: int, shift: int = 0) -> dict:
        return {f"e{i}": (i - shift) % n < k for i in range(n)}

    frontier = [
        FrontierPoint(f"x{k}", c, right(200, r)) for k, (c, r) in enumerate(((0.80, 80), (0.85, 60), (0.90, 40)))
    ]
    seeds = ((0.84, 66), (0.85, 58), (0.86, 60))
    rift = [FrontierPoint("rift", c, right(200, r, 13 * s), f"s{s}") for s, (c, r) in enumerate(seeds)]
    verdict = judge_claim(matched_clean_difference(rift, [frontier] * 3))
    assert verdict.status == INCONCLUSIVE and "paired examples per seed at 3 seeds" in verdict.sentence
