"""RIFT's plug-in: its rows, joint verdicts and frontier in the summary (claims/rift.py, rift_joint.py,
rift_frontier.py), its three tables after the claims (jointly, at matched clean accuracy, dominance) and the
frontier plot (frontier.png)."""

from __future__ import annotations

from pathlib import Path

from robustft.report.claims.plugin import Claims
from robustft.report.claims.rift import claim_rows, joint_claim_rows
from robustft.report.claims.rift_frontier import add_frontier
from robustft.report.rendering.plots import grid, pyplot, save
from robustft.report.rendering.tables import Table, pct, signed_interval

JOINT_NOTE = (
    "Intersection-union: the claim holds only if every component (baseline/attack) holds at the 95% level; one "
    "refuted component refutes it. Components are the rows of the claims table, or of the frontier table for a "
    "verdict at matched clean accuracy."
)
FRONTIER_NOTE = (
    "Each baseline's frontier is the best available one (rules registered in configs/rift-frontier-sst2.yaml): of its "
    "models at three or more strengths (clean accuracy on the whole test split against accuracy under the attack), a "
    "point beaten on both axes by another is dropped, the rest are joined piecewise linearly, flat below the least "
    "accurate point kept, never extrapolated. Each RIFT seed is read against it at its own clean accuracy, example by "
    "example, and against the baseline's own model of that seed where one exists (seed 0 otherwise); the interval is "
    "the paired one that counts seeds (robustft.evaluation.frontier), and each row says what it carries. A component "
    "is not reproduced only when its one-sided p-value is rejected by Holm's correction over the RIFT method's "
    "components (familywise 5%). The joint verdict is in the table above."
)
DOMINANCE_NOTE = (
    "A baseline at least as accurate as RIFT clean (whole test split) and under the attack (its sample), paired "
    "on the same examples, with neither interval of RIFT - baseline above 0, refutes RIFT > that baseline without "
    "any frontier (configs/rift-frontier-sst2.yaml, rule 1)."
)


def joint_claims_table(summary: dict) -> Table | None:
    rows = [
        [j["compared"], j["measured_on"], str(j["n_seeds"]), j["verdict"]]
        + ["; ".join(f"{status}: {', '.join(names)}" for status, names in j["failing"].items()) or "none"]
        + [j["matched_clean"]]
        for j in summary.get("joint_claims", [])
    ]
    columns = ["RIFT against", "measured on", "seeds", "joint verdict", "components that do not hold", "matched clean"]
    title = "RIFT's claim, jointly (every baseline under both attacks)"
    return Table(title, columns, rows, [JOINT_NOTE], section="claims") if rows else None


def _clean_and_robust(entries: list[dict], name: str) -> str:
    def dropped(e: dict) -> str:
        return " (dropped: beaten on both)" if e.get("kept") is False else ""

    return "; ".join(f"{e[name]}: {pct(e['clean'])} / {pct(e['robust'])}{dropped(e)}" for e in entries) or "-"


def _holm(r: dict) -> str:
    return "-" if r.get("p_below") is None else f"{r['p_below']:.3g} ({r['holm_level']:.3g})"


def frontier_table(summary: dict) -> Table | None:
    rows = [
        [
            r["compared"],
            r["recipe"],
            _clean_and_robust(r["points"], "label"),
            _clean_and_robust(r["rift_seeds"], "seed"),
        ]
        + ["; ".join(pct(x) for x in r.get("frontier_at", [])) or "-", signed_interval(r), r.get("carries") or "-"]
        + [_holm(r), r["verdict"]]
        for r in summary.get("frontier", [])
    ]
    columns = ["RIFT against", "attack", "frontier (seed 0): clean / robust %", "RIFT seeds: clean / robust %"]
    columns += ["frontier at RIFT's clean %", "RIFT - frontier, points [95% CI]", "the interval carries"]
    columns += ["one-sided p (Holm's level)", "verdict"]
    title = "RIFT at matched clean accuracy (each baseline's frontier)"
    return Table(title, columns, rows, [FRONTIER_NOTE], "claims") if rows else None


def _dominates(d: dict) -> str:
    if not d["dominates"]:
        return "no"
    return "yes" if d["refutes"] else "yes (no verdict: one seed or an unfinished study)"


def dominance_table(summary: dict) -> Table | None:
    """Rule 1 of the frontier study: a baseline model at least as accurate as RIFT clean and under the attack."""
    rows = [
        [f"{d['rift']} - {d['baseline']}", d["recipe"], signed_interval(d["clean"]), signed_interval(d["attack"])]
        + [_dominates(d), d["carries"]]
        for d in summary.get("dominance", [])
    ]
    columns = ["compared", "attack", "clean, points [95% CI]", "under attack, points [95% CI]", "dominates", "carries"]
    title = "RIFT against each baseline model: dominance"
    return Table(title, columns, rows, [DOMINANCE_NOTE], "claims") if rows else None


def _envelope(ax, r: dict, drawn: set) -> None:
    """One frontier's best available envelope (points beaten on both axes hollow, off it), and its RIFT method's
    seeds as stars the first time that method is drawn in the panel."""
    kept = [p for p in r["points"] if p.get("kept") is not False]  # the envelope (all, before it is known)
    xs, ys = [100 * p["clean"] for p in kept], [100 * p["robust"] for p in kept]
    low = min(100 * p["clean"] for p in r["points"])
    if low < xs[0]:  # flat below the least accurate point kept: the best available there
        xs, ys = [low, *xs], [ys[0], *ys]
    (line,) = ax.plot(xs, ys, label=r["baseline"])
    ax.scatter([100 * p["clean"] for p in kept], [100 * p["robust"] for p in kept], color=line.get_color())
    dropped = [p for p in r["points"] if p.get("kept") is False]
    ax.scatter([100 * p["clean"] for p in dropped], [100 * p["robust"] for p in dropped],
               marker="o", facecolors="none", edgecolors=line.get_color())  # fmt: skip
    if r["rift"] not in drawn:
        cleans, robusts = [100 * s["clean"] for s in r["rift_seeds"]], [100 * s["robust"] for s in r["rift_seeds"]]
        ax.scatter(cleans, robusts, marker="*", s=90, color="black", zorder=3, label=f"{r['rift']} (seeds)")
        drawn.add(r["rift"])


def frontier_plot(summary: dict, out_dir: Path) -> str | None:
    """One panel per task and attack: each frontier's best available envelope (the line the verdict reads), each
    RIFT method's seeds as stars."""
    rows = [r for r in summary.get("frontier", []) if r["points"]]
    panels = list(dict.fromkeys((r["task"], r["recipe"]) for r in rows))
    if not panels:
        return None
    plt = pyplot()
    n_rows, cols, size = grid(len(panels), width=5.5, height=4.0)
    fig, axes = plt.subplots(n_rows, cols, figsize=size, squeeze=False)
    for ax, (task, recipe) in zip(axes.flat, panels, strict=False):
        drawn: set[str] = set()
        for r in (r for r in rows if (r["task"], r["recipe"]) == (task, recipe)):
            _envelope(ax, r, drawn)
        ax.set_title(f"{recipe} on {task} test", fontsize=9)
        ax.set_xlabel("clean accuracy, whole test split (%)", fontsize=8)
        ax.set_ylabel("accuracy under attack (%)", fontsize=8)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    return save(plt, fig, axes, len(panels), "RIFT against each baseline's frontier", out_dir / "frontier.png")


def _add(summary: dict, runs, outcomes_of) -> None:
    summary["claims"] += claim_rows(summary)
    summary["joint_claims"] = joint_claim_rows(summary)
    add_frontier(summary, outcomes_of)


def _tables(summary: dict) -> list[Table]:
    return [t for t in (joint_claims_table(summary), frontier_table(summary), dominance_table(summary)) if t]


RIFT = Claims("RIFT", _add, _tables, plots=lambda s, out: [n for n in (frontier_plot(s, out),) if n])
