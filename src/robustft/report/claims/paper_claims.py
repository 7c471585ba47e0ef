"""The papers' claims answered from the runs (SPEC section 7), one row per comparison and one joint row per RIFT
method: reproduced (the interval excludes 0; "smaller than claimed" when it also rules out the paper's size), not
reproduced (it rules out the paper's size), inconclusive (with what would settle it), or no verdict (one seed, an
unfinished study, runs not committed; `evaluation.verdicts`).

Every figure is a paired difference over the seeds both methods ran (training seeds and k-shot samples) with the
interval that counts seeds as the replicates (`evaluation.intervals`). Only comparisons on the same backbone and
data are used, never on the data that chose a model's epoch; a row says when it measures a different quantity from
the paper's figure (one AdvGLUE task instead of the five-task score), and its verdict is then indicative only.

RIFT's claim is more robustness at comparable clean accuracy: a RIFT row against a baseline whose clean accuracy on
the attacked examples is higher (its paired interval above RIFT's) gets no verdict: it is stated as a robustness
gain at that many points lower clean accuracy, and the verdict needs the baseline's clean-vs-robust frontier
(`evaluation.frontier`). The claim holds only if it holds against every baseline under both attacks
(`verdicts.joint_verdict`)."""

from __future__ import annotations

from dataclasses import dataclass

from robustft.evaluation import verdicts
from robustft.evaluation.stats import mean_std
from robustft.report.claims.rift_joint import FRONTIER_STUDIES, joint_rows


@dataclass(frozen=True)
class Claim:
    text: str
    points: float | None  # the published effect in accuracy points (None: the paper claims a direction only)
    source: str


IM_ADVGLUE = Claim("IM-BERT scores higher than BERT on AdvGLUE", 8.3, "Kim, Park and Kim, EMNLP 2024")
# The abstract does not say which accuracy the +5.9 is (its benchmark is AdvGLUE): clean and AdvGLUE rows both answer.
IM_LOW_RESOURCE = Claim(
    "IM-BERT is more accurate than BERT after low-resource fine-tuning", 5.9, "Kim, Park and Kim, EMNLP 2024"
)
RIFT_ATTACKS = Claim(
    "RIFT is more accurate under PWWS and the genetic attack than adversarial fine-tuning baselines",
    None,
    "Dong et al., NeurIPS 2021",
)
ADVERSARIAL_METHODS = ("pgd", "freelb", "freelbpp", "trades", "ascc", "infobert")
RIFT_RECIPES = ("pwws", "genetic")
LOW_RESOURCE_MAX_EXAMPLES = 1000  # the low-resource sizes: 16 per class and 1,000 examples
INDICATIVE = "indicative only (one task)"
__all__ = ["FRONTIER_STUDIES", "claim_rows", "joint_claim_rows"]


def _pct(x: float) -> str:
    return f"{100 * x:+.1f}"


def oriented(result: dict, sign: int) -> dict:
    """The interval's result read the other way round when sign is -1 (B - A): the mean, interval and per-seed
    means negate, the spreads do not ("+ 0.0": a negated 0 is 0.0, so it prints as +0.0, not -0.0)."""
    low, high = sorted(sign * x + 0.0 for x in result["ci95"])
    return {
        **result,
        "difference": sign * result["difference"] + 0.0,
        "ci95": [low, high],
        "per_seed": [sign * x + 0.0 for x in result.get("per_seed") or []],
    }


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


def _row(claim: Claim, compared: str, measured_on: str, result: dict, verdict: verdicts.Verdict) -> dict:
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


def _small(size: str) -> bool:
    """A low-resource training size: 16 per class (k-shot), or a sample of at most 1,000 examples ("n=500")."""
    if size.endswith("/class"):
        return True
    return size.startswith("n=") and size[2:].isdigit() and int(size[2:]) <= LOW_RESOURCE_MAX_EXAMPLES


def is_rift(m: dict) -> bool:
    return m["arch"] == "plain" and m["method"].startswith("rift")


def is_adversarial_baseline(m: dict) -> bool:
    return m["arch"] == "plain" and m["method"] in ADVERSARIAL_METHODS


def clean_of(ev: dict, label: str, seeds: set) -> float | None:
    """The method's clean accuracy on the attacked sample, over the seeds the comparison paired (not all it ran)."""
    row = next((r for r in ev["rows"] if r["method"] == label), None) or {}
    return mean_std([s["clean"]["accuracy"] for s in row.get("seeds", []) if s["seed"] in seeds and s.get("clean")])[
        "mean"
    ]


def majority_beside(majority: float | None, accuracies: dict[str, float | None]) -> dict | None:
    """The majority class's accuracy beside the compared methods' (mean over seeds): an AdvGLUE row is read against
    it (its adversarial examples are built to fool models, and a model can fall below always-one-label)."""
    if majority is None:
        return None
    return {"accuracy": majority, "methods": accuracies}


def _advglue_rows(summary: dict) -> list[dict]:
    rows = []
    for label, a in summary["advglue"].items():
        vs = a.get("vs_baseline") or {}
        base = summary["advglue"].get(vs.get("baseline"))
        if a["arch"] == "im" and vs.get("pooled") and base["arch"] == "plain":
            claim = IM_LOW_RESOURCE if _small(a["size"]) else IM_ADVGLUE
            measured_on = "the AdvGLUE official score (five tasks, dev)"
            row = _row(
                claim,
                f"{label} - {vs['baseline']}",
                measured_on,
                vs["pooled"],
                judge(vs["pooled"], claim, study_of(summary)),
            )
            scores = {label: a["score"]["mean"], vs["baseline"]: base["score"]["mean"]}
            majority = majority_beside(a.get("majority_score"), scores)
            rows.append(row | ({"majority": majority} if majority else {}))
    return rows


def _advglue_majority(ev: dict, labels: tuple[str, str]) -> dict | None:
    if ev["kind"] != "advglue" or not ev.get("majority"):
        return None
    means = {r["method"]: r["accuracy"]["mean"] for r in ev["rows"]}
    return majority_beside(ev["majority"]["accuracy"], {label: means.get(label) for label in labels})


def _im_row(summary: dict, ev: dict, r: dict, five_task: bool) -> dict | None:
    """The IM-BERT claims from one evaluation row compared with plain BERT of the same method, or None."""
    methods, vs = summary["methods"], r["vs_baseline"]
    m, base, pooled = methods[r["method"]], methods[vs["baseline"]], vs["pooled"]
    if not (m["arch"] == "im" and base["arch"] == "plain" and m["method"] == base["method"]):
        return None
    if ev.get("chose_epochs"):  # never the data that chose an epoch
        return None
    compared = f"{r['method']} - {vs['baseline']}"
    majority = _advglue_majority(ev, (r["method"], vs["baseline"]))
    if _small(m["size"]) and ev["kind"] in ("clean", "advglue"):
        measured_on = f"{ev['title']}, trained on {m['size']}"
        row = _row(IM_LOW_RESOURCE, compared, measured_on, pooled, judge(pooled, IM_LOW_RESOURCE, study_of(summary)))
        return row | ({"majority": majority} if majority else {})
    if ev["kind"] == "advglue" and not five_task:
        # the paper's +8.3 is a mean over five tasks, which one task's effect may differ from
        row = _row(
            IM_ADVGLUE,
            compared,
            f"{ev['title']} (one task; the paper's figure is the five-task score)",
            pooled,
            judge(pooled, IM_ADVGLUE, study_of(summary)),
        )
        row["verdict"] = f"{INDICATIVE}: {row['verdict']}"
        return row | ({"majority": majority} if majority else {})
    return None


def claim_rows(summary: dict) -> list[dict]:
    """Every comparison in the summary that answers one of the claims above (the AdvGLUE claim by the five-task
    score where it was measured, else by each AdvGLUE task run), RIFT's one row per baseline and attack."""
    rows = _advglue_rows(summary)
    five_task = any(r["claim"] == IM_ADVGLUE.text for r in rows)
    for ev in summary["evaluations"]:
        for r in ev["rows"]:
            if not (r.get("vs_baseline") or {}).get("pooled"):
                continue
            row = _im_row(summary, ev, r, five_task)
            if row is not None:
                rows.append(row)
            rift = rift_component(summary, ev, r)
            if rift is not None:
                rows.append(rift)
    return rows


def _orientation(summary: dict, r: dict) -> int | None:
    """+1 when the row is RIFT compared with an adversarial baseline, -1 the other way round, else None."""
    methods = summary["methods"]
    m, base = methods[r["method"]], methods[r["vs_baseline"]["baseline"]]
    if is_rift(m) and is_adversarial_baseline(base):
        return 1
    if is_rift(base) and is_adversarial_baseline(m):
        return -1
    return None


def _matched_clean(verdict: verdicts.Verdict, gap: dict | None) -> verdicts.Verdict:
    """No verdict for the paper's claim where the baseline is more accurate clean (its interval above RIFT's): the
    claim is more robustness at comparable clean accuracy. A refutation stands (a baseline moved down to RIFT's
    clean accuracy along its frontier only gains robustness)."""
    if gap is None or gap["ci95"][1] >= 0 or verdict.status == verdicts.NOT_REPRODUCED:
        return verdict
    lower = f"{-100 * gap['difference']:.1f}"
    if verdict.status == verdicts.NO_VERDICT:
        return verdicts.Verdict(verdict.status, f"{verdict.sentence}; at {lower} points lower clean accuracy")
    found = "robustness gain" if verdict.holds else "no robustness gain shown"
    return verdicts.Verdict(
        verdicts.NO_VERDICT,
        f"{verdicts.NO_VERDICT} at comparable clean accuracy: {found} at {lower} points lower clean accuracy "
        "(needs the baseline's frontier)",
    )


def rift_component(summary: dict, ev: dict, r: dict) -> dict | None:
    """RIFT minus one adversarial baseline under one of the claim's attacks, or None for any other row."""
    if ev["kind"] != "attack" or ev["recipe"] not in RIFT_RECIPES:
        return None
    sign = _orientation(summary, r)
    if sign is None:
        return None
    vs = r["vs_baseline"]
    rift, base = (r["method"], vs["baseline"]) if sign == 1 else (vs["baseline"], r["method"])
    result = oriented(vs["pooled"], sign)
    gap = oriented(vs["clean_gap"], sign) if vs.get("clean_gap") else None
    verdict = _matched_clean(judge(result, RIFT_ATTACKS, study_of(summary)), gap)
    seeds = {p["seed"] for p in vs["per_seed"]}
    cleans = {label: clean_of(ev, label, seeds) for label in (rift, base)}
    clean = ", ".join(f"{label} clean {'-' if c is None else f'{100 * c:.1f}%'}" for label, c in cleans.items())
    row = _row(RIFT_ATTACKS, f"{rift} - {base}", f"{ev['title']} ({clean})", result, verdict)
    both = (vs.get("both_right_before") or {}).get("pooled")
    row |= {
        "rift": rift,
        "baseline": base,
        "recipe": ev["recipe"],
        "task": ev["task"],
        "clean_gap": gap and {"difference": gap["difference"], "ci95": gap["ci95"]},
        "both_right_before": both and {k: oriented(both, sign)[k] for k in ("difference", "ci95", "n")},
    }
    return row


def joint_claim_rows(summary: dict) -> list[dict]:
    """One row per RIFT method and task: the claim against every adversarial baseline under both attacks."""
    return joint_rows([r for r in summary["claims"] if r["claim"] == RIFT_ATTACKS.text], RIFT_ATTACKS)
