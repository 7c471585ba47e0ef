"""screening.png: stage A's residuals against K, every IM setting's damping against its EX control and cost, and the
picks' per-layer distances against EX and plain."""

from __future__ import annotations

from pathlib import Path

from studies.im_screening.records import converged, damping_vs_ex, ranked
from studies.im_screening.settings import BASE, CONVERGED, ex_of, key


def plot(done: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, mid, right) = plt.subplots(1, 3, figsize=(16, 4.5))
    colors = {"gd": "C0", "gd-backtracking": "C1", "anderson": "C2"}
    for r in done.values():  # stage A: residual after the solve against K
        s = r["setting"]
        if s["arch"] == "im" and all(s[k] == v for k, v in BASE.items()):
            end = max(v["end"] for v in r["residual"].values())
            left.scatter(s["K"], end, color=colors[s["solver"]], label=s["solver"])
    handles = {h.get_label(): h for h in left.collections}
    left.legend(handles.values(), handles.keys())
    left.axhline(CONVERGED, color="grey", ls=":")
    left.set(
        xlabel="K",
        ylabel="final relative residual (max over layers 4-6)",
        yscale="log",
        title="A: increment, dt 1, layers 4-6",
    )
    for r in done.values():  # every IM setting: damping against its EX control and cost
        s = r["setting"]
        ratio = damping_vs_ex(r, done) if s["arch"] == "im" else None
        if ratio is not None:
            mid.scatter(r["cost_x_plain"], ratio, color=colors[s["solver"]], marker="o" if converged(r) else "x")
    mid.axhline(1.0, color="grey", ls=":")
    mid.set(
        xlabel="cost of a forward x plain (CPU time)",
        ylabel="last-layer distance IM / matched EX (mean of swap, noise)",
        xscale="log",
        title="damping beyond the explicit control (o: solved)",
    )
    plain = done["plain"]
    right.plot(plain["swap"]["mean"], "k-", marker="o", label="plain BERT")
    for i, r in enumerate(ranked(done)[:3]):
        ex = done[key(ex_of(r["setting"]))]
        right.plot(r["swap"]["mean"], "-", marker="s", color=f"C{i + 3}", label=r["key"])
        right.plot(ex["swap"]["mean"], "--", marker="^", color=f"C{i + 3}", label="its EX control")
    right.set(
        xlabel="layer (0 = embeddings)",
        ylabel="relative distance, 1 word swap",
        title="picked settings against EX and BERT",
    )
    right.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
