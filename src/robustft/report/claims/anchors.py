"""The published anchors (AdvGLUE leaderboard, TextDefender, and the papers' headline claims), set beside our closest
figures, as a report plug-in (the anchors table, after the data's). Published numbers are percentages as printed in
the papers; ours are computed from the runs."""

from __future__ import annotations

import itertools
from operator import itemgetter

from robustft.report.claims.plugin import Claims
from robustft.report.rendering.tables import Table, backbones, pct, signed_interval

LEADERBOARD = {"BERT-large": 33.69, "RoBERTa-large": 50.21, "FreeLB": 50.48, "InfoBERT": 46.03, "DeBERTa": 60.86}
LEADERBOARD |= {"CreAT": 62.49, "best entry": 65.45}
KIM, DONG = "Kim, Park and Kim, EMNLP 2024", "Dong et al., NeurIPS 2021"
# TextDefender (Li et al. 2021, BERT-base), FreeLB++: clean, then under TextFooler, BERT-Attack and TextBugger
TEXTDEFENDER = {("IMDB", "imdb"): (93, 45, 40, 43), ("AG News", "ag_news"): (95, 52, 42, 56)}
TEXTDEFENDER_ATTACKS = (("clean", None), ("under TextFooler", "textfooler"), ("under BERT-Attack", "bert-attack"))
TEXTDEFENDER_ATTACKS += (("under TextBugger", "textbugger"),)


def _textdefender() -> list[tuple]:
    rows = [
        ("TextDefender", f"{name} FreeLB++ {what}", value, "Li et al. 2021", ("figure", "freelbpp", task, recipe))
        for (name, task), values in TEXTDEFENDER.items()
        for (what, recipe), value in zip(TEXTDEFENDER_ATTACKS, values, strict=True)
    ]
    rows[0] = (*rows[0][:3], "Li et al. 2021 (BERT-base)", rows[0][4])  # the first row names the paper's backbone
    return rows


# benchmark, figure, published value, source, and how to find our closest figure
PUBLISHED = [
    *[("AdvGLUE", f"official score, {name} (test)", v, "AdvGLUE leaderboard", ("advglue_score",))
      for name, v in LEADERBOARD.items()],
    ("AdvGLUE", "IM-BERT gain over BERT (points)", 8.3, KIM, ("im_advglue_gain",)),
    ("Low resource", "IM-BERT gain over BERT (points)", 5.9, KIM, ("im_gain", "/class")),
    ("RIFT", "IMDB clean accuracy", 84.2, DONG, ("figure", "rift", "imdb", None)),
    ("RIFT", "IMDB accuracy under genetic", 77.2, DONG, ("figure", "rift", "imdb", "genetic")),
    ("RIFT", "SNLI clean accuracy", 87.9, DONG, ("figure", "rift", "snli", None)),
    ("RIFT", "SNLI accuracy under genetic (1,000 ex.)", 83.5, DONG, ("figure", "rift", "snli", "genetic")),
    *_textdefender(),
]  # fmt: skip


def _im_advglue_gain(adv: dict) -> list[str]:
    """Each IM method's official score minus plain BERT's of the same method, backbone and size (AdvGLUE's methods
    span the five task models, so they carry their own settings), paired over seeds where the summary paired them."""
    scores = {label: a["score"]["mean"] for label, a in adv.items() if a["score"]["mean"] is not None}
    out = []
    for (label, score), (other, base) in itertools.product(scores.items(), repeat=2):
        setting = itemgetter("method", "model", "size")
        if adv[label]["arch"] != "im" or adv[other]["arch"] != "plain" or setting(adv[label]) != setting(adv[other]):
            continue
        m = adv[label]
        paired = m.get("vs_baseline", {})
        if paired.get("baseline") == other and paired.get("pooled"):
            n = paired["pooled"]["n_seeds"]  # over the seeds both ran, the interval counting seeds
            out.append(f"{label} - {other}: {signed_interval(paired['pooled'])} ({n} seed{'s' if n > 1 else ''}, dev)")
        else:
            out.append(f"{label} - {other}: {100 * (score - base):+.1f} (dev)")
    return out


def _ours(summary: dict, rule: tuple) -> list[str]:
    methods, rows = summary["methods"], [(ev, row) for ev in summary["evaluations"] for row in ev["rows"]]
    if rule[0] == "advglue_score":
        adv = summary["advglue"].items()
        return [f"{label}: {pct(a['score']['mean'])} (dev)" for label, a in adv if a["score"]["mean"] is not None]
    if rule[0] == "im_advglue_gain":
        return _im_advglue_gain(summary["advglue"])
    if rule[0] == "im_gain":
        return [
            f"{row['method']} vs {vs['baseline']} on {ev['title']}: {100 * vs['difference']['mean']:+.1f}"
            for ev, row in rows
            if methods[row["method"]]["arch"] == "im"
            and rule[1] in methods[row["method"]]["size"]
            and (vs := row.get("vs_baseline"))
            and vs["difference"]["mean"] is not None
        ]
    _, method, task, recipe = rule
    return [
        f"{row['method']}: {pct(row['accuracy']['mean'])} ({ev['title']})"
        for ev, row in rows
        if ev["task"] == task
        and ev["recipe"] == recipe
        and not (recipe is None and ev["kind"] == "attack")
        and methods[row["method"]]["method"].startswith(method)
    ]


def anchor_rows(summary: dict) -> list[dict]:
    rows, seen = [], set()
    for bench, figure, value, source, rule in PUBLISHED:
        ours = _ours(summary, rule)
        if ours and rule in seen:  # the leaderboard rows share one comparison: print it once
            ours = ["as above"]
        seen.add(rule)
        rows.append({"benchmark": bench, "figure": figure, "published": value, "source": source, "ours": ours})
    return rows


def anchors_table(summary: dict) -> Table:
    rows = [
        [a["benchmark"], a["figure"], str(a["published"]), a["source"], "; ".join(a["ours"]) or "not run"]
        for a in summary["anchors"]
    ]
    note = f"Absolute numbers on {backbones(summary)} differ from the papers' backbones; compare directions and gains."
    columns = ["benchmark", "figure", "published %", "source", "ours %"]
    return Table("Published anchors beside ours", columns, rows, [note], section="anchors")


def unrun_in_one_line(table: Table, what: str) -> Table:
    """`table` without its rows whose last cell is "not run", counted in one note by their first cell instead (the
    HTML page: most anchors are for tasks and backbones a study did not run)."""
    unrun = [row for row in table.rows if row[-1] == "not run"]
    if not unrun:
        return table
    groups = {row[0]: sum(r[0] == row[0] for r in unrun) for row in unrun}
    note = f"Not run: {len(unrun)} of {len(table.rows)} {what} ({', '.join(f'{g} {n}' for g, n in groups.items())})."
    kept = [row for row in table.rows if row[-1] != "not run"]
    return Table(table.title, table.columns, kept, [note, *table.notes], table.section, table.caption)


def _add(summary: dict, runs, outcomes_of) -> None:
    summary["anchors"] = anchor_rows(summary)


ANCHORS = Claims(
    "published anchors",
    _add,
    lambda summary: [anchors_table(summary)],
    page_tables=lambda summary: [unrun_in_one_line(anchors_table(summary), "anchors")],
    at_end=True,
)
