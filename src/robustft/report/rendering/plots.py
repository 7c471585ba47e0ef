"""The report's PNG plots (matplotlib, Agg backend): accuracy per method with 95% intervals for every
evaluation (one figure per kind: attack, advglue, clean), each method minus its baseline with the paired
difference's 95% interval (the summary's pooled comparison, not recomputed here), accuracy against training size,
the probe's per-layer hidden-state distances (the claims plug-ins draw their own with `pyplot`, `grid` and `save`). Each
function writes its file and returns its name, or None if the summary has nothing to plot."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

TITLE_CHARS = 48  # a panel title's line at fontsize 9 fits a 5-inch panel's axes (longer ones ran past the figure)
KIND_TITLES = {"attack": "Accuracy under attack", "advglue": "AdvGLUE accuracy", "clean": "Clean accuracy"}


def save(plt, fig, axes, used: int, title: str, path: Path, share_x: bool = False) -> str:
    """Wrap each panel's title to the panel (a long one ran past the figure's edge), give panels that compare the same
    quantity one x range (`share_x`), blank the grid's unused panels, title the figure, write it as a PNG and free
    it; returns the file name."""
    panels = list(axes.flat)
    for ax in panels[:used]:
        ax.set_title("\n".join(_wrapped(line) for line in ax.get_title().split("\n")), fontsize=9)
    if share_x and used:
        lows, highs = zip(*(ax.get_xlim() for ax in panels[:used]), strict=True)
        for ax in panels[:used]:
            ax.set_xlim(min(lows), max(highs))
    for ax in panels[used:]:
        ax.axis("off")
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path.name


def _wrapped(line: str) -> str:
    """`line` in lines of at most TITLE_CHARS, broken before its last parenthesis where both parts fit."""
    head, sep, tail = line.rpartition(" (")
    if len(line) > TITLE_CHARS and sep and len(head) <= TITLE_CHARS and len(tail) < TITLE_CHARS:
        return f"{head}\n({tail}"  # "bert-attack (strict) on ag_news test\n(n=1000, sample seed 0)"
    return textwrap.fill(line, TITLE_CHARS)


def pyplot():
    try:
        import matplotlib
    except ModuleNotFoundError:
        from robustft.errors import MissingResource

        raise MissingResource("plots need matplotlib: pip install 'robustft[plots]' (or pass --plots false)") from None

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def grid(n: int, width: float = 5.0, height: float = 3.2):
    cols = min(n, 3)
    rows = math.ceil(n / cols)
    return rows, cols, (width * cols, height * rows)


def accuracy_plot(summary: dict, kind: str, out_dir: Path) -> str | None:
    evaluations = [ev for ev in summary["evaluations"] if ev["kind"] == kind and ev["rows"]]
    if not evaluations:
        return None
    plt = pyplot()
    rows, cols, size = grid(len(evaluations), height=0.5 + 0.45 * max(len(ev["rows"]) for ev in evaluations) + 1)
    fig, axes = plt.subplots(rows, cols, figsize=size, squeeze=False)
    for ax, ev in zip(axes.flat, evaluations, strict=False):
        _accuracy_panel(ax, ev)
    return save(plt, fig, axes, len(evaluations), KIND_TITLES[kind], out_dir / f"accuracy_{kind}.png", share_x=True)


def _accuracy_panel(ax, ev: dict) -> None:
    """Each seed's accuracy with its interval, the mean over seeds in red where a method has several (the axis label
    promises red only where it is drawn), the majority class as a dashed line."""
    names, means = [row["method"] for row in ev["rows"]], False
    for y, row in enumerate(ev["rows"]):
        seeds = row["seeds"]
        for j, s in enumerate(seeds):
            if s["accuracy"] is None:
                continue
            offset = (j - (len(seeds) - 1) / 2) * 0.12
            lo, hi = s["ci95"]
            err = [[100 * (s["accuracy"] - lo)], [100 * (hi - s["accuracy"])]]
            ax.errorbar(100 * s["accuracy"], y + offset, xerr=err, fmt="o", color="C0", ms=4, capsize=2, lw=1)
        if row["accuracy"]["mean"] is not None and len(seeds) > 1:
            ax.plot(100 * row["accuracy"]["mean"], y, marker="|", color="C3", ms=14, mew=2)
            means = True
    if ev["majority"]:
        ax.axvline(100 * ev["majority"]["accuracy"], color="grey", ls="--", lw=1, label="majority class")
        ax.legend(loc="lower right", fontsize=7)
    ax.set_yticks(range(len(names)), names, fontsize=8)
    ax.set_ylim(-0.6, len(names) - 0.4)
    ax.invert_yaxis()
    ax.set_xlabel(f"accuracy % (95% Wilson CI per seed{'; red: mean over seeds' if means else ''})", fontsize=8)
    ax.set_title(ev["title"], fontsize=9)
    ax.grid(axis="x", alpha=0.3)


def _paired_panels(summary: dict) -> list[tuple[str, list[tuple[str, str, dict]]]]:
    """(title, [(method, baseline, pooled difference)]) per evaluation, and the AdvGLUE official score, with pairs."""
    panels = []
    for ev in sorted(summary["evaluations"], key=lambda ev: ev["kind"] != "attack"):  # attacks first, else in order
        rows = [
            (r["method"], r["vs_baseline"]["baseline"], r["vs_baseline"]["pooled"])
            for r in ev["rows"]
            if r.get("vs_baseline") and r["vs_baseline"].get("pooled")
        ]
        if rows:
            panels.append((ev["title"], rows))
    score = [
        (label, a["vs_baseline"]["baseline"], a["vs_baseline"]["pooled"])
        for label, a in summary["advglue"].items()
        if a.get("vs_baseline") and a["vs_baseline"].get("pooled")
    ]
    if score:
        panels.append(("AdvGLUE official score (dev)", score))
    return panels


def paired_difference_plot(summary: dict, out_dir: Path) -> str | None:
    """Per evaluation, each method minus its baseline in points with the 95% interval of the paired difference, the
    overview's (over seeds where several ran, hollow where one seed gives the paired t over examples only; the axis
    label names both), each seed's difference as a grey dot."""
    panels = _paired_panels(summary)
    if not panels:
        return None
    plt = pyplot()
    rows, cols, size = grid(len(panels), height=1.4 + 0.45 * max(len(pairs) for _, pairs in panels))
    fig, axes = plt.subplots(rows, cols, figsize=size, squeeze=False)
    for ax, (title, pairs) in zip(axes.flat, panels, strict=False):
        one_baseline = len({base for _, base, _ in pairs}) == 1
        for y, (_, _, pooled) in enumerate(pairs):
            d, (lo, hi) = 100 * pooled["difference"], pooled["ci95"]
            err = [[d - 100 * lo], [100 * hi - d]]
            hollow = pooled.get("basis") == "examples"
            ax.errorbar(d, y, xerr=err, fmt="o", color="C0", mfc="white" if hollow else "C0", ms=5, capsize=3, lw=1.2)
            if len(pooled.get("per_seed") or []) > 1:
                ax.plot([100 * x for x in pooled["per_seed"]], [y] * len(pooled["per_seed"]), "o", color="grey", ms=3)
        ax.axvline(0, color="grey", lw=1)
        names = [m if one_baseline else f"{m} - {base}" for m, base, _ in pairs]
        ax.set_yticks(range(len(names)), names, fontsize=8)
        ax.set_ylim(-0.6, len(names) - 0.4)
        ax.invert_yaxis()
        ax.set_xlabel("points, 95% CI (filled: over seeds; hollow: one seed, paired t; grey: each seed)", fontsize=8)
        ax.set_title(title + (f"\nminus {pairs[0][1]}" if one_baseline else ""), fontsize=9)
        ax.grid(axis="x", alpha=0.3)
    title = "Method minus baseline, paired on the same examples"
    return save(plt, fig, axes, len(panels), title, out_dir / "paired_difference.png", share_x=True)


def training_size_plot(summary: dict, out_dir: Path) -> str | None:
    families = [f for f in summary["training_size"] if sum(p["n_train"] is not None for p in f["points"]) >= 2]
    if not families:
        return None
    measured = [t for f in families for p in f["points"] for t in p["evaluations"]]
    titles = sorted({"dev (model selection)"} | {t for t in measured if measured.count(t) >= 2})
    plt = pyplot()
    rows, cols, size = grid(len(titles))
    fig, axes = plt.subplots(rows, cols, figsize=size, squeeze=False)
    for ax, title in zip(axes.flat, titles, strict=False):
        for i, fam in enumerate(families):
            points = []
            for p in fam["points"]:
                stat = p["dev"] if title.startswith("dev ") else p["evaluations"].get(title)
                if p["n_train"] is not None and stat and stat["mean"] is not None:
                    points.append((p["n_train"], 100 * stat["mean"], 100 * (stat["std"] or 0.0)))
            if points:
                xs, ys, es = zip(*points, strict=True)
                ax.errorbar(xs, ys, yerr=es, marker="o", capsize=3, color=f"C{i}", label=fam["family"])
        ax.set_xscale("log")
        ax.set_xlabel("training examples (log)", fontsize=8)
        ax.set_ylabel("accuracy % (mean ± std over seeds)", fontsize=8)
        ax.set_title(title, fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    title, path = "Robustness against training size", out_dir / "training_size.png"
    return save(plt, fig, axes, len(titles), title, path, share_x=True)


def probe_plot(summary: dict, out_dir: Path) -> str | None:
    probes = [p for p in summary["probes"] if p["models"]]
    if not probes:
        return None
    plt = pyplot()
    rows, cols, size = grid(len(probes))
    fig, axes = plt.subplots(rows, cols, figsize=size, squeeze=False)
    for ax, p in zip(axes.flat, probes, strict=False):
        for i, (name, m) in enumerate(p["models"].items()):
            mean, std = m["distance_mean"] or [], m["distance_std"] or [0.0] * len(m["distance_mean"] or [])
            layers = list(range(len(mean)))
            ax.plot(layers, mean, marker="o", color=f"C{i}", label=name)
            ax.fill_between(
                layers,
                [a - b for a, b in zip(mean, std, strict=True)],
                [a + b for a, b in zip(mean, std, strict=True)],
                color=f"C{i}",
                alpha=0.15,
            )
        ax.set_xlabel("layer (0 = embeddings)", fontsize=8)
        ax.set_ylabel("relative distance (mean ± std)", fontsize=8)
        ax.set_title(f"{p['task']} {p['split']}: {p['perturbation']}", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    return save(plt, fig, axes, len(probes), "Probe: hidden-state distance per layer", out_dir / "probe.png")


def write_plots(summary: dict, out_dir: Path) -> list[str]:
    names = [accuracy_plot(summary, kind, out_dir) for kind in ("attack", "advglue", "clean")]
    names += [
        paired_difference_plot(summary, out_dir),
        training_size_plot(summary, out_dir),
        probe_plot(summary, out_dir),
    ]
    return [n for n in names if n]
