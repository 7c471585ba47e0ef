"""The verdict rule for a published claim (SPEC section 7), one comparison at a time and jointly.

A claim says A beats B (by `claimed`, an accuracy difference, or just beats it when None); the caller orients the
comparison so the claimed effect is positive and passes the seed-counting interval of A - B:

- reproduced: the interval excludes 0 on the claimed side ("smaller than claimed" when it also lies below the
  paper's size);
- not reproduced: the interval lies wholly below the paper's size (below 0 for a direction-only claim): it rules
  out the claim;
- inconclusive otherwise, with the seeds and examples that would settle it (`power.what_would_settle`);
- no verdict from one seed, an unfinished preset or runs that are not committed (the caller knows the last two).

A joint claim ("RIFT beats every adversarial baseline under PWWS and genetic") is an intersection-union test: it
holds only if every component holds, each at the interval's level, which keeps the joint error at that level with
no multiplicity correction. One refuted component refutes it; the verdict names the components that fail.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from robustft.evaluation.intervals import StatisticsInputError
from robustft.evaluation.power import what_would_settle

REPRODUCED = "reproduced"
SMALLER = "smaller than claimed"
NOT_REPRODUCED = "not reproduced"
INCONCLUSIVE = "inconclusive"
NO_VERDICT = "no verdict"


@dataclass(frozen=True)
class Verdict:
    status: str  # one of the five words above
    sentence: str  # the status with its reason, ready to print
    settle: dict | None = None  # what would settle an inconclusive one (power.what_would_settle)

    @property
    def holds(self) -> bool:
        """The claimed direction is shown (reproduced, possibly smaller than claimed)."""
        return self.status in (REPRODUCED, SMALLER)


@dataclass(frozen=True)
class JointVerdict:
    status: str
    sentence: str
    failing: tuple[str, ...]  # components that do not hold, in the order given
    components: dict[str, Verdict] = field(default_factory=dict)

    @property
    def holds(self) -> bool:
        return self.status in (REPRODUCED, SMALLER)


def _size(claimed: float) -> str:
    return f"+{100 * claimed:.1f}"


def _withheld(result: dict, preset_finished: bool, runs_committed: bool) -> list[str]:
    reasons = []
    if result.get("n_seeds", 0) < 2 or result.get("basis") != "seeds":
        reasons.append("one seed (an interval over examples only says nothing about seeds)")
    if not preset_finished:
        reasons.append("the preset is unfinished")
    if not runs_committed:
        reasons.append("the runs are not committed")
    return reasons


def judge_claim(
    result: dict, claimed: float | None = None, *, preset_finished: bool = True, runs_committed: bool = True
) -> Verdict:
    """The verdict on a claim from `intervals.paired_difference_over_seeds`'s result for A - B (module docstring)."""
    if claimed is not None and claimed <= 0:
        raise StatisticsInputError(
            f"claimed effect {claimed} is not positive: orient the comparison so the claim is A - B > 0"
        )
    reasons = _withheld(result, preset_finished, runs_committed)
    if reasons:
        return Verdict(NO_VERDICT, f"{NO_VERDICT}: " + "; ".join(reasons))
    low, high = result["ci95"]
    if low > 0:
        if claimed is not None and high < claimed:
            return Verdict(SMALLER, f"{SMALLER}: a gain, but the interval rules out the paper's {_size(claimed)}")
        return Verdict(REPRODUCED, f"{REPRODUCED}: the interval excludes 0")
    if claimed is not None and high < claimed:
        return Verdict(NOT_REPRODUCED, f"{NOT_REPRODUCED}: the interval rules out the paper's {_size(claimed)}")
    if claimed is None and high < 0:
        return Verdict(NOT_REPRODUCED, f"{NOT_REPRODUCED}: the interval rules out a gain (the baseline is ahead)")
    settle = what_would_settle(result, claimed)
    return Verdict(INCONCLUSIVE, f"{INCONCLUSIVE}: {settle['sentence']}", settle)


def joint_verdict(components: Mapping[str, Verdict]) -> JointVerdict:
    """One verdict for a claim that must hold for every component (intersection-union, module docstring)."""
    if not components:
        raise StatisticsInputError("a joint claim needs at least one component verdict")
    parts = dict(components)
    failing = tuple(name for name, v in parts.items() if not v.holds)
    refuted = [name for name, v in parts.items() if v.status == NOT_REPRODUCED]
    unjudged = [name for name, v in parts.items() if v.status == NO_VERDICT]
    smaller = [name for name, v in parts.items() if v.status == SMALLER]
    if refuted:
        status, sentence = NOT_REPRODUCED, f"{NOT_REPRODUCED}: ruled out for {', '.join(refuted)}"
    elif not failing and smaller:
        status, sentence = (
            SMALLER,
            f"{SMALLER}: every component is a gain, below the paper's size for {', '.join(smaller)}",
        )
    elif not failing:
        status, sentence = REPRODUCED, f"{REPRODUCED}: every one of {len(parts)} components holds"
    elif unjudged:
        status, sentence = NO_VERDICT, f"{NO_VERDICT}: no verdict for {', '.join(unjudged)}"
    else:
        status, sentence = INCONCLUSIVE, f"{INCONCLUSIVE}: not shown for {', '.join(failing)}"
    if failing and status != NOT_REPRODUCED:
        sentence += f" (every component must hold; {len(failing)} of {len(parts)} do not)"
    elif refuted and len(failing) > len(refuted):
        sentence += f"; not shown for {', '.join(n for n in failing if n not in refuted)}"
    return JointVerdict(status, sentence, failing, parts)
