"""What every claim shares: a paper's claim, its verdict with the study's standing (`evaluation.verdicts`: on the
paired difference over seeds with the interval that counts seeds), its row in the summary's "claims" (each paper's
plug-in adds its rows), and the verdict tables after the overview: the papers' claims and the comparisons a study
registered beside those with its baseline."""

from __future__ import annotations

from dataclasses import dataclass

from robustft.evaluation import verdicts
from robustft.evaluation.intervals import DIFFERENCE_ONE_SEED, DIFFERENCE_SEEDS
from robustft.report.claims.plugin import Claims
from robustft.report.rendering.tables import (
    Table,
    direction,
    measured_label,
    pct,
    seeds_by_examples,
    signed_interval,
)


@dataclass(frozen=True)
class Claim:
    text: str
    points: float | None  # the published effect in accuracy points (None: the paper claims a direction only)
    source: str


def study_of(summary: dict) -> dict:
    """The standing of the study the runs come from (summary.standing); a summary without one is judged as given."""
    return summary.get("study") or {"finished": True, "runs_committed": True, "why": ""}


def judge(result: dict, claim: Claim, study: dict) -> verdicts.Verdict:
    """`verdicts.judge_claim` with the study's standing; a withheld verdict says the study's own reason too."""
    claimed = None if claim.points is None else claim.points / 100
    verdict = verdicts.judge_claim(
        result, claimed, preset_finished=study["finished"], runs_committed=study["runs_committed"]
    )
    if (
        verdict.status == verdicts.NO_VERDICT
        and study.get("why")
        and not (study["finished"] and study["runs_committed"])
    ):
        return verdicts.Verdict(verdict.status, f"{verdict.sentence} ({study['why']})")
    return verdict


def claim_row(claim: Claim, compared: str, measured_on: str, result: dict, verdict: verdicts.Verdict) -> dict:
    return {
        "claim": claim.text,
        "paper": f"+{claim.points} points" if claim.points is not None else "better (no size given)",
        "source": claim.source,
        "compared": compared,
        "measured_on": measured_on,
        "difference": result["difference"],
        "ci95": result["ci95"],
        "n_seeds": result["n_seeds"],
        "n": result.get("n"),
        "basis_note": result.get("basis_note", ""),
        "status": verdict.status,
        "verdict": verdict.sentence,
        "settle": (verdict.settle or {}).get("sentence"),
    }


def paired_rows(summary: dict) -> list[tuple[dict, dict]]:
    """(evaluation, row) of every row paired with its baseline over seeds: what a claim can be answered from."""
    return [(ev, r) for ev in summary["evaluations"] for r in ev["rows"] if (r.get("vs_baseline") or {}).get("pooled")]


def majority_beside(majority: float | None, accuracies: dict[str, float | None]) -> dict | None:
    """The majority class's accuracy beside the compared methods' (mean over seeds): an AdvGLUE row is read against
    it (its adversarial examples are built to fool models, and a model can fall below always-one-label)."""
    if majority is None:
        return None
    return {"accuracy": majority, "methods": accuracies}


def measured_on(c: dict) -> str:
    """Where a claim row was measured, with the clean gap and the examples both models got right where it has them."""
    parts = [c["measured_on"]]
    gap = c.get("clean_gap")
    if gap:
        parts.append(f"clean gap {signed_interval(gap)}")
    both = c.get("both_right_before")
    if both:
        parts.append(f"on the {both['n']} examples both got right before the attack {signed_interval(both)}")
    if c.get("basis_note") and c.get("n_seeds") == 1:
        parts.append(c["basis_note"])
    if c.get("majority"):
        parts.append(majority_words(c["majority"]))
    return "; ".join(parts)


def majority_words(majority: dict) -> str:
    """ "majority class 51.4%; im-exact 43.9, bert 44.6 (both below it)": an AdvGLUE row's floor beside it."""
    floor, found = majority["accuracy"], {k: v for k, v in majority["methods"].items() if v is not None}
    figures = ", ".join(f"{label} {pct(acc)}" for label, acc in found.items())
    below = [label for label, acc in found.items() if acc < floor]
    if below and len(below) == len(found):
        where = "both below it" if len(found) == 2 else "all below it"
    else:
        where = f"{', '.join(below)} below it" if below else "none below it"
    return f"majority class {pct(floor)}%; {figures} ({where})"


CLAIM_COLUMNS = ["claim", "paper", "ours", "measured on", "difference, points [95% CI]", "seeds x examples", "verdict"]
CLAIMS_NOTE = (
    "Paired differences over seeds (training seeds and k-shot samples) with the interval that counts seeds as the "
    "replicates (docs/statistics.md). Reproduced: the interval excludes 0 (smaller than claimed: and rules out the "
    "paper's size); not reproduced: it rules out the paper's size (for a claimed direction: lies below 0); else "
    "inconclusive, with what would settle it. No verdict from one seed, an unfinished study or runs not committed, "
    "nor for RIFT against a baseline more accurate before the attack (the claim is at comparable clean accuracy)."
)


def claims_table(summary: dict) -> Table | None:
    rows = [
        [c["claim"], f"{c['paper']} ({c['source']})", c["compared"], measured_on(c), signed_interval(c)]
        + [seeds_by_examples(c), c["verdict"]]
        for c in summary.get("claims", [])
    ]
    return Table("The papers' claims", CLAIM_COLUMNS, rows, [CLAIMS_NOTE], section="claims") if rows else None


def registered_verdict(pooled: dict, study: dict) -> str:
    """A registered comparison without a paper's size: its direction (the interval's side of 0), withheld like a
    claim's verdict from one seed, an unfinished study or runs not committed."""
    reasons = ["one seed (an interval over examples only says nothing about seeds)"] if pooled["n_seeds"] < 2 else []
    if not study.get("finished", True):
        reasons.append("the preset is unfinished" + (f" ({study['why']})" if study.get("why") else ""))
    if not study.get("runs_committed", True):
        reasons.append("the runs are not committed")
    if reasons:
        return "no verdict: " + "; ".join(reasons)
    low, high = pooled["ci95"]
    return f"{'higher' if low > 0 else 'lower'}: the interval excludes 0" if low > 0 or high < 0 else direction(pooled)


def _accuracies_beside(ev: dict, c: dict) -> str:
    """Both methods' accuracy (mean over seeds) and their baseline's: whether A - B moved A up or B down."""
    means = {r["method"]: r["accuracy"]["mean"] for r in ev["rows"]}
    mine = next((r for r in ev["rows"] if r["method"] == c["a"]), {})
    base = (mine.get("vs_baseline") or {}).get("baseline")
    shown = [c["a"], c["b"]] + ([base] if base and base not in (c["a"], c["b"]) else [])
    parts = [f"{label}{' (baseline)' if label == base else ''} {pct(means.get(label))}%" for label in shown]
    if ev["kind"] == "advglue" and ev.get("majority"):  # read against always the commonest label
        parts.append(f"majority class {pct(ev['majority']['accuracy'])}%")
    return ", ".join(parts)


def registered_rows(summary: dict) -> list[list[str]]:
    """[compared, measured on, difference [CI], seeds x examples, verdict] of each registered comparison."""
    study = summary.get("study") or {}
    return [
        [f"{c['a']} - {c['b']}", f"{measured_label(ev)} ({_accuracies_beside(ev, c)})", signed_interval(c["pooled"])]
        + [seeds_by_examples(c["pooled"]), registered_verdict(c["pooled"], study)]
        for ev in summary["evaluations"]
        for c in ev.get("registered", [])
    ]


def registered_table(summary: dict) -> Table | None:
    rows = registered_rows(summary)
    if not rows:
        return None
    columns = ["compared", "measured on", "difference, points [95% CI]", "seeds x examples", "verdict"]
    note = (
        "Comparisons the study's settings registered beside those with its baseline, paired on the same examples "
        f"seed by seed; the interval is the {DIFFERENCE_SEEDS} (one seed: the {DIFFERENCE_ONE_SEED}; "
        "docs/statistics.md). No paper's size: the verdict is the interval's side of 0."
    )
    return Table("Registered comparisons", columns, rows, [note], section="claims")


def _start(summary: dict, runs, outcomes_of) -> None:
    summary["claims"] = []  # each paper's plug-in adds its rows


VERDICTS = Claims("verdicts", _start, lambda s: [t for t in (claims_table(s), registered_table(s)) if t is not None])
