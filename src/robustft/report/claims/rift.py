"""RIFT's claim (Dong et al., NeurIPS 2021) answered from the runs: one row per adversarial baseline and attack
(PWWS, genetic), joining the summary's "claims" (`claims.common`), and one joint row per RIFT method and task.

The claim is more robustness at comparable clean accuracy: a RIFT row against a baseline whose clean accuracy on
the attacked examples is higher (its paired interval above RIFT's) gets no verdict: it is stated as a robustness
gain at that many points lower clean accuracy, and the verdict needs the baseline's clean-vs-robust frontier
(`evaluation.frontier`, claims/rift_frontier.py). The claim holds only if it holds against every baseline under
both attacks (`verdicts.joint_verdict`, claims/rift_joint.py)."""

from __future__ import annotations

from robustft.evaluation import verdicts
from robustft.evaluation.stats import mean_std
from robustft.report.claims.common import Claim, claim_row, judge, paired_rows, study_of
from robustft.report.claims.rift_joint import joint_rows

RIFT_ATTACKS = Claim(
    "RIFT is more accurate under PWWS and the genetic attack than adversarial fine-tuning baselines",
    None,
    "Dong et al., NeurIPS 2021",
)
ADVERSARIAL_METHODS = ("pgd", "freelb", "freelbpp", "trades", "ascc", "infobert")
RIFT_RECIPES = ("pwws", "genetic")


def oriented(result: dict, sign: int) -> dict:
    """The interval's result read the other way round when sign is -1 (B - A): the mean, interval and per-seed
    means negate, the spreads do not ("+ 0.0": a negated 0 is 0.0, so it prints as +0.0, not -0.0)."""
    low, high = sorted(sign * x + 0.0 for x in result["ci95"])
    per_seed = [sign * x + 0.0 for x in result.get("per_seed") or []]
    return {**result, "difference": sign * result["difference"] + 0.0, "ci95": [low, high], "per_seed": per_seed}


def is_rift(m: dict) -> bool:
    return m["arch"] == "plain" and m["method"].startswith("rift")


def is_adversarial_baseline(m: dict) -> bool:
    return m["arch"] == "plain" and m["method"] in ADVERSARIAL_METHODS


def clean_of(ev: dict, label: str, seeds: set) -> float | None:
    """The method's clean accuracy on the attacked sample, over the seeds the comparison paired (not all it ran)."""
    row = next((r for r in ev["rows"] if r["method"] == label), None) or {}
    cleans = [s["clean"]["accuracy"] for s in row.get("seeds", []) if s["seed"] in seeds and s.get("clean")]
    return mean_std(cleans)["mean"]


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
    row = claim_row(RIFT_ATTACKS, f"{rift} - {base}", f"{ev['title']} ({clean})", result, verdict)
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


def claim_rows(summary: dict) -> list[dict]:
    """RIFT's row per adversarial baseline and attack, in the summary's order of evaluations."""
    paired = paired_rows(summary)
    return [row for ev, r in paired if (row := rift_component(summary, ev, r)) is not None]


def joint_claim_rows(summary: dict) -> list[dict]:
    """One row per RIFT method and task: the claim against every adversarial baseline under both attacks."""
    components = [r for r in summary["claims"] if r["claim"] == RIFT_ATTACKS.text]
    return joint_rows(components, RIFT_ATTACKS, study_of(summary).get("frontier_studies") or {})
