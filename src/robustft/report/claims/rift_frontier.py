"""RIFT's claim at matched clean accuracy: each adversarial baseline trained at three or more strengths traces a
clean-vs-robust frontier, and RIFT's seeds are read against it at their own clean accuracy
(`evaluation.frontier.matched_clean_difference`), one component per baseline and attack, then one joint verdict
(intersection-union) per RIFT method and task.

A frontier is found in the runs, not declared: the seed-0 models of one adversarial method whose settings differ in
one key only (its strength knob, e.g. PGD's step_size), at three or more values of it, on one task, model and
training size (configs/rift-frontier-sst2.yaml with the rift-1000 study's default cells). Clean accuracy is the
whole test split's, robust accuracy the attack's on its seeded test sample; each point is one seed (the
pre-registered design), so the frontier's own seed spread is not carried (the interval says so)."""

from __future__ import annotations

import json

from robustft.evaluation import verdicts
from robustft.evaluation.frontier import MIN_FRONTIER_POINTS, FrontierPoint, matched_clean_difference
from robustft.evaluation.intervals import StatisticsInputError
from robustft.report.claims.paper_claims import (
    RIFT_ATTACKS,
    RIFT_RECIPES,
    is_adversarial_baseline,
    is_rift,
    judge,
    study_of,
)
from robustft.report.claims.rift_joint import joint_rows

FRONTIER_SEED = "s0"  # the pre-registered design: one seed a strength (the default cell's seed 0)
MATCHED = "read at RIFT's clean accuracy on each baseline's clean-vs-robust frontier (one seed a strength)"


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


def _seed_accuracy(row: dict | None, seed: str) -> tuple[float, int] | None:
    entry = next((s for s in (row or {}).get("seeds", []) if s["seed"] == seed), None)
    if entry is None or entry.get("accuracy") is None:
        return None
    return entry["accuracy"], entry["n"]


def _row(ev: dict, label: str) -> dict | None:
    return next((r for r in ev["rows"] if r["method"] == label), None)


def _clean_test(summary: dict, task: str) -> dict | None:
    return next(
        (ev for ev in summary["evaluations"] if ev["kind"] == "clean" and ev["task"] == task and ev["split"] == "test"),
        None,
    )


def _points(frontier: dict, clean_ev: dict, attack_ev: dict, knob_values: dict) -> tuple[list, list[str]]:
    points, missing = [], []
    for label in frontier["labels"]:
        clean, robust = (
            _seed_accuracy(_row(clean_ev, label), FRONTIER_SEED),
            _seed_accuracy(_row(attack_ev, label), FRONTIER_SEED),
        )
        if clean is None or robust is None:
            missing.append(label)
            continue
        points.append(FrontierPoint(clean[0], robust[0], clean[1], robust[1], f"{label} ({knob_values[label]})"))
    return sorted(points, key=lambda p: p.clean), missing


def _rift_seeds(clean_ev: dict, attack_ev: dict, rift: str, trained: list[str]) -> tuple[list, list[str], int, list]:
    """RIFT's (clean, robust) pair per seed it trained, and the seeds that lack either result."""
    seeds, pairs, n, missing = [], [], 0, []
    for seed in trained:
        clean, robust = _seed_accuracy(_row(clean_ev, rift), seed), _seed_accuracy(_row(attack_ev, rift), seed)
        if clean is None or robust is None:
            missing.append(seed)
            continue
        seeds.append(seed)
        pairs.append((clean[0], robust[0]))
        n = robust[1]
    return pairs, seeds, n, missing


def _component(summary: dict, rift: str, frontier: dict, clean_ev: dict, attack_ev: dict) -> dict:
    methods = summary["methods"]
    knob_values = {label: methods[label]["method_args"][frontier["knob"]] for label in frontier["labels"]}
    points, missing = _points(frontier, clean_ev, attack_ev, knob_values)
    pairs, seeds, n, rift_missing = _rift_seeds(clean_ev, attack_ev, rift, methods[rift]["seeds"])
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
        "points": [
            {"label": p.label, "clean": p.clean, "robust": p.robust, "n_clean": p.n_clean, "n_robust": p.n_robust}
            for p in points
        ],
        "rift_seeds": [{"seed": s, "clean": c, "robust": r} for s, (c, r) in zip(seeds, pairs, strict=True)],
        "n": n,
        "n_seeds": len(pairs),
        "basis_note": "",
    }
    reasons = [f"no seed-{FRONTIER_SEED[1:]} result yet for {', '.join(missing)}"] if missing else []
    if rift_missing:
        reasons.append(f"{rift} has no clean test or {attack_ev['recipe']} result for {', '.join(rift_missing)}")
    result = None
    if not reasons:
        try:
            result = matched_clean_difference(points, pairs, n_robust=n or None)
        except StatisticsInputError as err:
            reasons.append(str(err))
    if result is None:
        return row | {
            "difference": None,
            "ci95": None,
            "status": verdicts.NO_VERDICT,
            "verdict": f"no verdict: {'; '.join(reasons)}",
        }
    verdict = judge(result, RIFT_ATTACKS, study_of(summary))
    note = "RIFT's seed spread and the frontier points' binomial noise; not the frontier's own seed spread"
    return row | {
        "difference": result["difference"],
        "ci95": result["ci95"],
        "frontier_at": result["frontier_at"],
        "per_seed": result["per_seed"],
        "basis": result["basis"],
        "basis_note": note,
        "status": verdict.status,
        "verdict": verdict.sentence,
    }


def frontier_rows(summary: dict, found: list[dict]) -> list[dict]:
    """One component per RIFT method, frontier (of `frontiers`) and RIFT attack in the summary (module docstring)."""
    rows, methods = [], summary["methods"]
    for rift, m in methods.items():
        clean_ev = _clean_test(summary, m["task"]) if is_rift(m) else None
        if clean_ev is None:
            continue
        attacks = [
            ev
            for ev in summary["evaluations"]
            if ev["kind"] == "attack"
            and ev["recipe"] in RIFT_RECIPES
            and ev["task"] == m["task"]
            and ev["split"] == "test"
        ]
        for frontier in (f for f in found if _trained_on(methods[f["labels"][0]]) == _trained_on(m)):
            rows += [_component(summary, rift, frontier, clean_ev, ev) for ev in attacks]
    return rows


def _without_frontier(methods: dict, found: list[dict], components: list[dict]) -> list[str]:
    """The adversarial baselines of the components' setting on no frontier: the joint verdict does not cover them."""
    on = {label for f in found for label in f["labels"]}
    compared = {_trained_on(methods[c["rift"]]) for c in components}
    return sorted(
        label
        for label, m in methods.items()
        if is_adversarial_baseline(m) and label not in on and _trained_on(m) in compared
    )


def add_frontier(summary: dict) -> None:
    """Where the runs trace frontiers: the components under "frontier", and one joint verdict per RIFT method and
    task over them, in place of the joint row against single baseline strengths (which cannot carry a verdict)."""
    found = frontiers(summary["methods"])
    components = frontier_rows(summary, found)
    if not components:
        return
    left_out = _without_frontier(summary["methods"], found, components)
    note = MATCHED + (f"; not covered (no frontier): {', '.join(left_out)}" if left_out else "")
    matched = [j | {"matched_clean": note, "frontier": None} for j in joint_rows(components, RIFT_ATTACKS)]
    replaced = {(j["compared"].split(" - ", 1)[0], j["task"]) for j in matched}
    kept = [j for j in summary["joint_claims"] if (j["compared"].split(" - ", 1)[0], j["task"]) not in replaced]
    summary["frontier"] = components
    summary["joint_claims"] = kept + [j | {"at_matched_clean": True} for j in matched]
