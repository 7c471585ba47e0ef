"""RIFT's claim at matched clean accuracy, by the rules registered in configs/rift-frontier-sst2.yaml (2026-12-07):

1. Dominance: a baseline model at least as accurate as RIFT clean and under an attack (neither seed-aware interval
   of RIFT - baseline above 0) refutes "RIFT > that baseline" there, frontier or not (`dominance_rows`).
2. Each adversarial baseline trained at three or more strengths traces a frontier; RIFT's seeds are read against
   its best available (Pareto) envelope at their own clean accuracy, per example and per seed
   (`evaluation.frontier.matched_clean_difference`), one component per baseline and attack.
3. A strength with seeds beyond 0 gives RIFT seed s the baseline's seed-s model there, so the interval carries the
   frontier's own seed spread where every weighted strength has them; each component says what it carries.
4. Jointly per RIFT method and task: "reproduced" needs every component's interval above 0 (intersection-union);
   "not reproduced" needs a dominance refutation or a component below 0 after Holm's correction over all
   components (one-sided p-values, familywise 5%); a component without a result counts as p = 1.

A frontier is found in the runs, not declared: the models of one adversarial method whose settings differ in one
key only (its strength knob, e.g. PGD's step_size), at three or more values of it, on one task, model and training
size. Clean accuracy is the whole test split's, robust accuracy the attack's on its seeded test sample."""

from __future__ import annotations

import json

from robustft.evaluation import verdicts
from robustft.evaluation.frontier import (
    MIN_FRONTIER_POINTS,
    FrontierPoint,
    dominance,
    matched_clean_difference,
)
from robustft.evaluation.intervals import StatisticsInputError
from robustft.evaluation.multiplicity import FAMILYWISE, holm, holm_thresholds
from robustft.report.claims.common import judge, study_of
from robustft.report.claims.plugin import Outcomes
from robustft.report.claims.rift import RIFT_ATTACKS, RIFT_RECIPES, is_adversarial_baseline, is_rift
from robustft.report.claims.rift_joint import joint_rows

FRONTIER_SEED = "s0"  # every strength has seed 0; seeds beyond it are the registered extension's
MATCHED = (
    "read at RIFT's clean accuracy on each baseline's best available (Pareto) frontier, per example and per seed; "
    f"refuted by dominance or by a component below 0 after Holm's correction (familywise {FAMILYWISE:.0%})"
)


def _trained_on(m: dict) -> tuple:
    """What a method's models share with RIFT's to be compared: backbone, task and training size."""
    return m["model"], m["task"], m["size"]


def _numeric(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def frontiers(methods: dict) -> list[dict]:
    """Every frontier in the methods: {"name", "knob", "labels" (by strength)}. A label sits on each frontier its
    settings span (a method varied in two keys traces two)."""
    found = []
    baselines = {label: m for label, m in methods.items() if is_adversarial_baseline(m)}
    keys = sorted({k for m in baselines.values() for k in m["method_args"]})
    for knob in keys:
        groups: dict[tuple, list[str]] = {}
        for label, m in baselines.items():
            if not _numeric(m["method_args"].get(knob)):  # a strength is a number (not a schedule or a name)
                continue
            rest = {k: v for k, v in m["method_args"].items() if k != knob}
            groups.setdefault((*_trained_on(m), m["method"], json.dumps(rest, sort_keys=True)), []).append(label)
        for labels in groups.values():
            by_value = sorted(labels, key=lambda label: baselines[label]["method_args"][knob])
            if len({baselines[label]["method_args"][knob] for label in labels}) >= MIN_FRONTIER_POINTS:
                name = min(labels, key=len)  # the default's label: the others extend it (pgd, pgd-x2, pgd-x4)
                found.append({"name": name, "knob": knob, "labels": by_value})
    return found


def _entry(ev: dict, label: str, seed: str) -> dict | None:
    row = next((r for r in ev["rows"] if r["method"] == label), None) or {}
    entry = next((s for s in row.get("seeds", []) if s["seed"] == seed), None)
    return entry if entry is not None and entry.get("accuracy") is not None else None


def _clean_test(summary: dict, task: str) -> dict | None:
    return next(
        (ev for ev in summary["evaluations"] if ev["kind"] == "clean" and ev["task"] == task and ev["split"] == "test"),
        None,
    )


def _model(clean_ev: dict, attack_ev: dict, label: str, seed: str, outcomes_of: Outcomes) -> FrontierPoint | None:
    """The model's clean test accuracy and per-example outcomes under the attack, or None where any is missing."""
    clean, attacked = _entry(clean_ev, label, seed), _entry(attack_ev, label, seed)
    outcomes = outcomes_of(attacked["run"]) if clean and attacked and attacked.get("run") else None
    return FrontierPoint(label, clean["accuracy"], outcomes, seed) if outcomes else None


def _own_or_first(clean_ev, attack_ev, label: str, seed: str, outcomes_of: Outcomes) -> FrontierPoint | None:
    """The baseline's model of this seed, or its seed-0 model where it has none (one seed: no seed spread)."""
    own = _model(clean_ev, attack_ev, label, seed, outcomes_of)
    return own or _model(clean_ev, attack_ev, label, FRONTIER_SEED, outcomes_of)


def _result_or_reasons(frontier, clean_ev, attack_ev, rift, seeds, outcomes_of) -> tuple[dict | None, list, list]:
    """The matched-clean difference of RIFT's seeds against the frontier, RIFT's models, and why there is none."""
    models = {s: _model(clean_ev, attack_ev, rift, s, outcomes_of) for s in seeds}
    reasons, rift_models = [], [m for m in models.values() if m]
    if len(rift_models) < len(seeds):
        lacking = ", ".join(s for s, m in models.items() if m is None)
        reasons.append(f"{rift} has no clean test or {attack_ev['recipe']} result with examples for {lacking}")
    first = {label: _model(clean_ev, attack_ev, label, FRONTIER_SEED, outcomes_of) for label in frontier["labels"]}
    missing = [label for label, m in first.items() if m is None]
    if missing:
        reasons.append(f"no seed-0 result with examples yet for {', '.join(missing)}")
    if reasons or not rift_models:
        return None, rift_models, reasons
    lines = [[_own_or_first(clean_ev, attack_ev, label, m.seed, outcomes_of) for label in first] for m in rift_models]
    try:
        return matched_clean_difference(rift_models, lines), rift_models, []
    except StatisticsInputError as err:
        return None, rift_models, [str(err)]


def _point_rows(frontier: dict, clean_ev: dict, attack_ev: dict, knob_values: dict, outcomes_of, result) -> list:
    """The seed-0 points for the table and plot, each marked whether the envelope keeps it (at seed 0)."""
    kept = set(result["envelope"][0]) if result else None
    rows = []
    for label in frontier["labels"]:
        p = _model(clean_ev, attack_ev, label, FRONTIER_SEED, outcomes_of)
        if p is not None:
            rows.append({"label": f"{label} ({knob_values[label]})", "method": label, "clean": p.clean})
            rows[-1] |= {"robust": p.robust, "kept": None if kept is None else label in kept}
    return sorted(rows, key=lambda r: r["clean"])


def _component(summary: dict, rift: str, frontier: dict, clean_ev, attack_ev, outcomes_of: Outcomes) -> dict:
    methods = summary["methods"]
    knob_values = {label: methods[label]["method_args"][frontier["knob"]] for label in frontier["labels"]}
    seeds = methods[rift]["seeds"]
    result, models, reasons = _result_or_reasons(frontier, clean_ev, attack_ev, rift, seeds, outcomes_of)
    name = f"{frontier['name']} ({frontier['knob']})"  # unique: one method may trace a frontier in two settings
    row = {
        "claim": RIFT_ATTACKS.text,
        "paper": "better (no size given)",
        "source": RIFT_ATTACKS.source,
        "rift": rift,
        "baseline": name,
        "knob": frontier["knob"],
        "recipe": attack_ev["recipe"],
        "task": attack_ev["task"],
        "compared": f"{rift} - {name} frontier",
        "measured_on": f"{attack_ev['title']}, at RIFT's clean accuracy on {attack_ev['task']} test (all examples)",
        "points": _point_rows(frontier, clean_ev, attack_ev, knob_values, outcomes_of, result),
        "rift_seeds": [{"seed": m.seed, "clean": m.clean, "robust": m.robust} for m in models],
        "n": result["n"] if result else None,
        "n_seeds": len(models),
        "basis_note": result["basis_note"] if result else "",
    }
    if result is None:
        return row | {"difference": None, "ci95": None, "p_below": None, "reasons": reasons}
    keys = ("difference", "ci95", "df", "basis", "spread", "per_seed", "frontier_at", "weights", "p_below")
    return row | {k: result[k] for k in (*keys, "frontier_seeds", "carries", "not_carried")}


def _judged(row: dict, rejected: bool, threshold: float, study: dict) -> dict:
    """A component's verdict under rule 4: reproduced when its interval lies above 0, not reproduced only when Holm's
    correction rejects it, else inconclusive (no verdict without a result, from one seed or an unfinished study)."""
    if row["ci95"] is None:
        return row | {"status": verdicts.NO_VERDICT, "verdict": f"{verdicts.NO_VERDICT}: {'; '.join(row['reasons'])}"}
    verdict = judge(row, RIFT_ATTACKS, study)
    p = f"one-sided p = {row['p_below']:.3g}, Holm's level {threshold:.3g}"
    if verdict.status in (verdicts.NO_VERDICT, verdicts.REPRODUCED):
        return row | {"status": verdict.status, "verdict": verdict.sentence, "holm_rejected": rejected}
    if rejected:
        sentence = f"{verdicts.NOT_REPRODUCED}: below 0 after Holm's correction ({p})"
        return row | {"status": verdicts.NOT_REPRODUCED, "verdict": sentence, "holm_rejected": True}
    below = "below 0 alone, not after Holm's correction" if row["ci95"][1] < 0 else "the interval includes 0"
    sentence = f"{verdicts.INCONCLUSIVE}: {below} ({p})"
    return row | {"status": verdicts.INCONCLUSIVE, "verdict": sentence, "holm_rejected": False}


def judge_components(components: list[dict], study: dict) -> list[dict]:
    """Every component's verdict, Holm's correction running over all of a RIFT method's components on one task (a
    component without a result enters as p = 1: leaving it out would loosen the correction)."""
    out = []
    groups: dict[tuple, list[int]] = {}
    for k, c in enumerate(components):
        groups.setdefault((c["rift"], c["task"]), []).append(k)
    judged: dict[int, dict] = {}
    for members in groups.values():
        p = {k: 1.0 if components[k]["p_below"] is None else components[k]["p_below"] for k in members}
        rejected, levels = holm(p), holm_thresholds(p)
        for k in members:
            judged[k] = _judged(components[k], rejected[k], levels[k], study) | {"holm_level": levels[k]}
    out = [judged[k] for k in range(len(components))]
    return [{k: v for k, v in c.items() if k != "reasons"} for c in out]


def _differences(ev: dict, rift: str, baseline: str, seeds: list[str], outcomes_of: Outcomes, base_seeds: list):
    """RIFT - baseline per example, one row per RIFT seed (the baseline's own seed, or seed 0 where it has none), on
    the examples every row scored; None where a result or its examples is missing."""
    rows = []
    for seed in seeds:
        own = _entry(ev, baseline, seed)
        base, mine = own or _entry(ev, baseline, FRONTIER_SEED), _entry(ev, rift, seed)
        if base is None or mine is None:
            return None
        a, b = outcomes_of(mine.get("run", "")), outcomes_of(base.get("run", ""))
        if not a or not b:
            return None
        rows.append((a, b))
        base_seeds.append(seed if own else FRONTIER_SEED)
    ids = sorted(set.intersection(*(set(a) & set(b) for a, b in rows)))
    return [[float(a[i]) - float(b[i]) for i in ids] for a, b in rows] if len(ids) >= 2 else None


def dominance_rows(summary: dict, outcomes_of: Outcomes) -> list[dict]:
    """Rule 1: every adversarial baseline model of RIFT's setting (any strength, the default included) against each
    RIFT method under each of the claim's attacks, on the clean test split and the attacked sample."""
    rows, methods, study = [], summary["methods"], study_of(summary)
    for rift, m in methods.items():
        clean_ev = _clean_test(summary, m["task"]) if is_rift(m) else None
        if clean_ev is None:
            continue
        for ev in _attacks(summary, m["task"]):
            for label, b in methods.items():
                if not (is_adversarial_baseline(b) and _trained_on(b) == _trained_on(m)):
                    continue
                base_seeds: list[str] = []
                clean = _differences(clean_ev, rift, label, m["seeds"], outcomes_of, [])
                attack = _differences(ev, rift, label, m["seeds"], outcomes_of, base_seeds)
                if clean is None or attack is None:
                    continue
                found = dominance(clean, attack)
                own = len(set(base_seeds)) == len(base_seeds) > 1
                carries = "both sides' seed spread and example noise" if own else "RIFT's seeds and example noise only"
                refutes = found["dominates"] and study["finished"] and study["runs_committed"] and len(clean) > 1
                rows.append(
                    {
                        "rift": rift,
                        "baseline": label,
                        "recipe": ev["recipe"],
                        "task": ev["task"],
                        "n_seeds": len(clean),
                        "clean": {k: found["clean"][k] for k in ("difference", "ci95", "n")},
                        "attack": {k: found["attack"][k] for k in ("difference", "ci95", "n")},
                        "dominates": found["dominates"],
                        "refutes": refutes,
                        "carries": carries,
                    }
                )
    return rows


def _attacks(summary: dict, task: str) -> list[dict]:
    return [
        ev
        for ev in summary["evaluations"]
        if ev["kind"] == "attack" and ev["recipe"] in RIFT_RECIPES and ev["task"] == task and ev["split"] == "test"
    ]


def frontier_rows(summary: dict, found: list[dict], outcomes_of: Outcomes) -> list[dict]:
    """One component per RIFT method, frontier (of `frontiers`) and RIFT attack in the summary, judged jointly."""
    rows, methods = [], summary["methods"]
    for rift, m in methods.items():
        clean_ev = _clean_test(summary, m["task"]) if is_rift(m) else None
        if clean_ev is None:
            continue
        for frontier in (f for f in found if _trained_on(methods[f["labels"][0]]) == _trained_on(m)):
            rows += [
                _component(summary, rift, frontier, clean_ev, ev, outcomes_of) for ev in _attacks(summary, m["task"])
            ]
    return judge_components(rows, study_of(summary))


def _without_frontier(methods: dict, found: list[dict], components: list[dict]) -> list[str]:
    """The adversarial baselines of the components' setting on no frontier: only dominance covers them."""
    on = {label for f in found for label in f["labels"]}
    compared = {_trained_on(methods[c["rift"]]) for c in components}
    return sorted(
        label
        for label, m in methods.items()
        if is_adversarial_baseline(m) and label not in on and _trained_on(m) in compared
    )


def _with_dominance(joint: dict, refuting: list[dict]) -> dict:
    """Rule 1 in the joint row: a baseline that dominates RIFT refutes the claim against it."""
    if not refuting:
        return joint
    names = ", ".join(f"{d['baseline']}/{d['recipe']}" for d in refuting)
    sentence = f"{verdicts.NOT_REPRODUCED}: a baseline at least as accurate clean and under the attack ({names})"
    failing = joint["failing"] | {"dominated by": [f"{d['baseline']}/{d['recipe']}" for d in refuting]}
    return joint | {"status": verdicts.NOT_REPRODUCED, "verdict": sentence, "failing": failing}


def add_frontier(summary: dict, outcomes_of: Outcomes | None = None) -> None:
    """Where the runs trace frontiers: the components under "frontier", the dominance checks under "dominance", and
    one joint verdict per RIFT method and task over them, in place of the joint row against single baseline
    strengths (which cannot carry a verdict). `outcomes_of`: a run's per-example outcomes by its name."""
    outcomes_of = outcomes_of or (lambda name: None)
    found = frontiers(summary["methods"])
    components = frontier_rows(summary, found, outcomes_of)
    if not components:
        return
    dominated = dominance_rows(summary, outcomes_of)
    left_out = _without_frontier(summary["methods"], found, components)
    note = MATCHED + (f"; on no frontier (dominance only): {', '.join(left_out)}" if left_out else "")
    matched = []
    for j in joint_rows(components, RIFT_ATTACKS, {}):  # each row's frontier and note set below
        rift = j["compared"].split(" - ", 1)[0]
        refuting = [d for d in dominated if d["rift"] == rift and d["task"] == j["task"] and d["refutes"]]
        matched.append(_with_dominance(j, refuting) | {"matched_clean": note, "frontier": None})
    replaced = {(j["compared"].split(" - ", 1)[0], j["task"]) for j in matched}
    kept = [j for j in summary["joint_claims"] if (j["compared"].split(" - ", 1)[0], j["task"]) not in replaced]
    summary["frontier"] = components
    summary["dominance"] = dominated
    summary["joint_claims"] = kept + [j | {"at_matched_clean": True} for j in matched]
