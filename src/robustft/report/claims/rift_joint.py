"""RIFT's claim as one joint verdict per RIFT method and task: it must hold against every adversarial baseline
under both attacks (intersection-union, `verdicts.joint_verdict`), and the row names the components that fail.
A verdict at matched clean accuracy needs the baselines' clean-vs-robust frontier (`evaluation.frontier`), which a
frontier study traces; the row names it for the task."""

from __future__ import annotations

from robustft.evaluation import verdicts

# the study that traces each baseline's frontier, by task (its config's header has its price)
FRONTIER_STUDIES = {"sst2": "configs/rift-frontier-sst2.yaml"}


def matched_clean_note(task: str) -> str:
    study = FRONTIER_STUDIES.get(task)
    if study:
        return f"a verdict at matched clean accuracy needs the frontier study {study}"
    return f"a verdict at matched clean accuracy needs a frontier study on {task} (none written)"


def _seeds(rows: list[dict]) -> str:
    counts = sorted({r["n_seeds"] for r in rows})
    return str(counts[0]) if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"


def _grouped(failing: dict[str, str]) -> dict[str, list[str]]:
    """The components that do not hold, by their own verdict (no verdict, inconclusive, not reproduced)."""
    out: dict[str, list[str]] = {}
    for name, status in failing.items():
        out.setdefault(status, []).append(name)
    return out


def _short(joint: verdicts.JointVerdict, total: int) -> str:
    """The joint verdict with counts in place of the long list of names (the table lists them by status)."""
    if joint.status == verdicts.NOT_REPRODUCED or not joint.failing:
        return joint.sentence
    return f"{joint.status}: {len(joint.failing)} of {total} components do not hold"


def joint_rows(components: list[dict], claim) -> list[dict]:
    """`components`: the claim's rows (paper_claims.rift_component), grouped here by RIFT method and task."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for row in components:
        groups.setdefault((row["rift"], row["task"]), []).append(row)
    out = []
    for (rift, task), rows in groups.items():
        parts = {f"{r['baseline']}/{r['recipe']}": verdicts.Verdict(r["status"], r["verdict"]) for r in rows}
        joint = verdicts.joint_verdict(parts)
        baselines = list(dict.fromkeys(r["baseline"] for r in rows))
        recipes = list(dict.fromkeys(r["recipe"] for r in rows))
        out.append(
            {
                "claim": claim.text,
                "paper": "better (no size given)",
                "source": claim.source,
                "compared": f"{rift} - each of {', '.join(baselines)}",
                "measured_on": f"{' and '.join(recipes)} on {task} test",
                "task": task,
                "n_seeds": _seeds(rows),
                "components": len(parts),
                "failing": _grouped({name: parts[name].status for name in joint.failing}),
                "status": joint.status,
                "verdict": _short(joint, len(parts)),
                "matched_clean": matched_clean_note(task),
                "frontier": FRONTIER_STUDIES.get(task),
            }
        )
    return out
