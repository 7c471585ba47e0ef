"""RIFT's claim as one joint verdict per RIFT method and task: it must hold against every adversarial baseline
under both attacks (intersection-union, `verdicts.joint_verdict`), and the row names the components that fail.
A verdict at matched clean accuracy needs the baselines' clean-vs-robust frontier (`evaluation.frontier`), which a
frontier study traces; the row names the one the study's standing gives for the task (`summary.standing`'s
`frontier_studies`, from the data: a library names no study of its own)."""

from __future__ import annotations

from robustft.evaluation import verdicts


def matched_clean_note(task: str, study: str | None) -> str:
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


def joint_rows(components: list[dict], claim, frontier_studies: dict[str, str]) -> list[dict]:
    """`components`: the claim's rows (rift.rift_component), grouped here by RIFT method and task;
    `frontier_studies`: the study that traces the baselines' frontiers, by task."""
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
                "matched_clean": matched_clean_note(task, frontier_studies.get(task)),
                "frontier": frontier_studies.get(task),
            }
        )
    return out
