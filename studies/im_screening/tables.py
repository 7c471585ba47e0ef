"""The screening's tables (Markdown): every setting against plain and its explicit control, and the per-layer
amplification of the picks."""

from __future__ import annotations

import math

from studies.im_screening.records import converged, damps_more
from studies.im_screening.settings import ex_of, key


def fmt(x, digits=3):
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def table(done: dict) -> str:
    plain = done["plain"]
    rows = [
        "| setting | residual start -> end (max over layers) | diverged | swap: last-layer distance "
        "(x plain, x EX) | noise: last-layer distance (x plain, x EX) | converges and damps more than EX | "
        "cost x plain (CPU) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in done.values():
        s = r["setting"]
        ex = done.get(key(ex_of(s))) if s["arch"] == "im" else None
        res = r["residual"]
        start = max((v["start"] for v in res.values()), default=None)
        end = max((v["end"] for v in res.values()), default=None)
        cells = []
        for p in ("swap", "noise"):
            d = r[p]["mean"][-1]
            vs_ex = d / ex[p]["mean"][-1] if ex else None
            cells.append(f"{d:.3f} ({d / plain[p]['mean'][-1]:.3f}, {fmt(vs_ex)})")
        verdict = (
            "-"
            if s["arch"] != "im"
            else (
                "yes"
                if converged(r) and damps_more(r, done)
                else "converges, damps less"
                if converged(r)
                else "no solve"
            )
        )
        div = sum(v["diverged"] for v in res.values()) if res else "-"
        rows.append(
            f"| {r['key']} | {fmt(start)} -> {fmt(end)} | {div} | {cells[0]} | {cells[1]} | {verdict} | "
            f"{r['cost_x_plain']:.1f} |"
        )
    return "\n".join(rows)


def amplification_table(done: dict, records: list[dict]) -> str:
    """Per layer: the distance after the layer over the distance before it, for BERT, each record and its EX."""
    plain = done["plain"]
    layers = len(plain["swap"]["amplification"])
    rows = [
        "| perturbation | model | " + " | ".join(f"layer {i}" for i in range(1, layers + 1)) + " |",
        "|---|---|" + "---|" * layers,
    ]
    for p in ("swap", "noise"):
        seen = {"plain": plain}
        for r in records:
            seen.setdefault(key(ex_of(r["setting"])), done[key(ex_of(r["setting"]))])
            seen.setdefault(r["key"], r)
        for k, r in seen.items():
            rows.append(f"| {p} | {k} | " + " | ".join(f"{a:.3f}" for a in r[p]["amplification"]) + " |")
    return "\n".join(rows)
