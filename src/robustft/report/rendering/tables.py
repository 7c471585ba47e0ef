"""The report's tables as plain rows of text, rendered by both the Markdown and the HTML writers.
Accuracies print as percentages with one decimal; intervals in brackets; n always beside them."""

from __future__ import annotations

from dataclasses import dataclass, field

from robustft.evaluation.advglue import TASKS as ADVGLUE_TASKS


@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)
    section: str = ""


def pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}"


def interval(ci) -> str:
    return "-" if not ci else f"[{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]"


def mean_pm(stat: dict | None) -> str:
    if not stat or stat.get("mean") is None:
        return "-"
    if stat.get("std") is None:
        return pct(stat["mean"])
    return f"{pct(stat['mean'])} ± {pct(stat['std'])}"


def per_seed(seeds: list[dict]) -> str:
    return "; ".join(f"{s['seed']}: {pct(s['accuracy'])} {interval(s['ci95'])} n={s['n']}" for s in seeds)


def comparison(vs: dict | None) -> str:
    if not vs:
        return "-"
    if not vs["per_seed"]:
        return vs["verdict"]
    if len(vs["per_seed"]) == 1:
        p = vs["per_seed"][0]
        sign = "+" if p["difference"] >= 0 else ""
        return (
            f"{sign}{pct(p['difference'])} {interval(p['ci95'])} vs {vs['baseline']}, McNemar p={p['p_value']:.3g},"
            f" n={p['n']}: {vs['verdict']}"
        )
    d = vs["difference"]
    return f"{'+' if d['mean'] >= 0 else ''}{mean_pm(d)} vs {vs['baseline']} (paired per seed): {vs['verdict']}"


def methods_table(summary: dict) -> Table:
    rows = []
    for label, m in summary["methods"].items():
        dev = mean_pm(m["dev_accuracy"]) + (f" (n={m['dev_n']})" if m["dev_n"] else "")
        time = m["train_time_s"]
        rows.append(
            [
                label,
                m["model"],
                m["task"],
                m["size"] + (f" ({m['n_train']})" if m["n_train"] else ""),
                str(len(m["seeds"])),
                dev if m["dev_accuracy"]["mean"] is not None else "-",
                f"{time['mean']:.0f}" if time["mean"] is not None else "-",
            ]
        )
    return Table(
        "Methods",
        ["method", "model", "trained on", "size", "seeds", "dev accuracy % (mean ± std)", "train time s"],
        rows,
        [f"Baseline for paired comparisons: {summary['baseline']}. Model selection on dev only."],
        section="methods",
    )


def evaluation_table(ev: dict) -> Table:
    attack = ev["kind"] == "attack"
    columns = [
        "method",
        "seeds",
        ("under attack" if attack else "accuracy") + " % (mean ± std)",
        "per seed: accuracy [95% CI] n",
    ]
    if attack:
        columns += ["clean on sample %", "success rate %", "perturbed words %", "queries"]
    columns.append("paired vs baseline: difference [95% CI], test, verdict")
    if attack:
        columns.append("the same on the examples both got right before the attack")
    rows = []
    for row in ev["rows"]:
        cells = [row["method"], str(len(row["seeds"])), mean_pm(row["accuracy"]), per_seed(row["seeds"])]
        if attack:

            def avg(key, seeds=row["seeds"]):
                values = [s[key] for s in seeds if s.get(key) is not None]
                return f"{sum(values) / len(values):.1f}" if values else "-"

            cells += [
                mean_pm(row.get("clean")),
                avg("attack_success_rate"),
                avg("avg_perturbed_word_pct"),
                avg("avg_num_queries"),
            ]
        cells.append(comparison(row.get("vs_baseline")))
        if attack:
            cells.append(comparison((row.get("vs_baseline") or {}).get("both_right_before")))
        rows.append(cells)
    notes = []
    maj = ev["majority"]
    if maj:
        notes.append(f"Majority-class baseline: {pct(maj['accuracy'])}% (always label {maj['label']}, n={maj['n']}).")
    if ev.get("duplicates"):
        notes.append(f"Left out as repeats of a method and seed already counted: {', '.join(ev['duplicates'])}.")
    if attack:
        notes.append("Accuracy under attack = examples still right after the attack / all attacked (TextAttack).")
        notes.append(
            "The last column compares the two models at equal clean accuracy: only the examples both got right "
            "before the attack, so neither is credited for having fewer to defend or blamed for errors it made clean."
        )
        errored = [f"{s['run']} ({s['num_errors']})" for row in ev["rows"] for s in row["seeds"] if s.get("num_errors")]
        if errored:
            notes.append(f"Left out of n: examples whose attack ended in an error, in {', '.join(errored)}.")
    return Table(ev["title"], columns, rows, notes, section=ev["kind"])


def advglue_table(summary: dict) -> Table | None:
    if not summary["advglue"]:
        return None
    rows, notes = [], []
    majority = None
    for label, a in summary["advglue"].items():
        rows.append(
            [label, str(a["seeds_run"]), mean_pm(a["score"])] + [mean_pm(a["tasks"].get(t)) for t in ADVGLUE_TASKS]
        )
        if a["missing"]:
            notes.append(f"{label}: no overall score, missing {', '.join(a['missing'])}.")
        for d in a.get("vs_baseline", {}).get("per_seed", []):
            verdict = "detected" if d["detected"] else "no detectable difference"
            notes.append(
                f"{label} - {a['vs_baseline']['baseline']} ({d['seed']}): {100 * d['difference']:+.1f} points "
                f"[{100 * d['ci95'][0]:+.1f}, {100 * d['ci95'][1]:+.1f}], paired bootstrap over each split's "
                f"examples: {verdict}."
            )
        majority = majority or (a["majority_score"], a["majority_tasks"])
    if majority:
        rows.append(["majority class", "-", pct(majority[0])] + [pct(majority[1].get(t)) for t in ADVGLUE_TASKS])
    notes.append(
        "Official score: per task the mean of its metrics (QQP: accuracy and F1), MNLI = mean of matched "
        "and mismatched, overall = mean of the five tasks; on the public dev set (738 examples)."
    )
    return Table(
        "AdvGLUE official score (dev)",
        ["method", "seeds", "score %"] + [t.upper() for t in ADVGLUE_TASKS],
        rows,
        notes,
        section="advglue",
    )


def training_size_tables(summary: dict) -> list[Table]:
    out = []
    for fam in summary["training_size"]:
        # only evaluations measured at two sizes or more say anything about the trend
        titles = sorted(
            t
            for t in {t for p in fam["points"] for t in p["evaluations"]}
            if sum(t in p["evaluations"] for p in fam["points"]) >= 2
        )
        rows = [
            [p["size"], str(p["n_train"] or "-"), mean_pm(p["dev"])]
            + [mean_pm(p["evaluations"].get(t)) for t in titles]
            for p in fam["points"]
        ]
        out.append(
            Table(
                f"Training size: {fam['family']} ({fam['model']} on {fam['task']})",
                ["size", "train examples", "dev %"] + titles,
                rows,
                section="size",
            )
        )
    return out


def probe_tables(summary: dict) -> list[Table]:
    out = []
    for p in summary["probes"]:
        layers = max((len(m["distance_mean"] or []) for m in p["models"].values()), default=0)
        rows = [[name] + [f"{d:.3f}" for d in (m["distance_mean"] or [])] for name, m in p["models"].items()]
        out.append(
            Table(
                f"Probe: relative hidden-state distance per layer ({p['task']} {p['split']}, "
                f"{p['n_pairs']} pairs, {p['perturbation']})",
                ["model"] + ["emb"] + [f"L{i}" for i in range(1, layers)],
                rows,
                [f"run {p['run']}"],
                section="probe",
            )
        )
    return out


def anchors_table(summary: dict) -> Table:
    rows = [
        [a["benchmark"], a["figure"], str(a["published"]), a["source"], "; ".join(a["ours"]) or "not run"]
        for a in summary["anchors"]
    ]
    return Table(
        "Published anchors beside ours",
        ["benchmark", "figure", "published %", "source", "ours %"],
        rows,
        ["Absolute numbers on MiniLM differ from the papers' backbones; compare directions and gains."],
        section="anchors",
    )


def claims_table(summary: dict) -> Table | None:
    rows = [
        [
            c["claim"],
            f"{c['paper']} ({c['source']})",
            c["compared"],
            c["measured_on"],
            f"{100 * c['difference']:+.1f} [{100 * c['ci95'][0]:+.1f}, {100 * c['ci95'][1]:+.1f}]",
            f"{c['n_seeds']} x {c['n']}" if c["n"] else str(c["n_seeds"]),
            c["verdict"],
        ]
        for c in summary.get("claims", [])
    ]
    if not rows:
        return None
    return Table(
        "The papers' claims",
        ["claim", "paper", "ours", "measured on", "difference, points [95% CI]", "seeds x examples", "verdict"],
        rows,
        [
            "Paired differences pooled over seeds (training seeds and k-shot samples), the interval from resampling "
            "seeds and examples. Reproduced: the interval is above 0 and reaches the paper's size; smaller than "
            "claimed: above 0, below it; not reproduced: it rules the paper's size out (or, for a claimed direction, "
            "lies below 0); else inconclusive."
        ],
        section="claims",
    )


def deviations_table(summary: dict) -> Table:
    def runs(names):
        return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")

    rows = [[d["text"], d["source"], runs(d["runs"])] for d in summary["deviations"]]
    return Table("Deviations from the papers' protocols", ["deviation", "source", "runs"], rows, section="deviations")


def short_title(ev: dict) -> str:
    if ev["kind"] == "attack":
        return f"{ev['recipe']}{'/' + ev['protocol'] if ev['protocol'] else ''} {ev['task']} {ev['split']}"
    return f"{ev['task']} {ev['split']}"


def _mark(vs: dict | None) -> str:
    """▲ / ▼ when every paired seed says the method is above / below its baseline."""
    if not vs or not vs.get("detected"):
        return ""
    return " ▲" if vs["difference"]["mean"] > 0 else " ▼"


def overview_table(summary: dict) -> Table:
    """One row per method: dev accuracy, the AdvGLUE score and every evaluation's accuracy (mean ± std)."""
    evaluations = summary["evaluations"]
    has_advglue = bool(summary["advglue"])
    columns = (
        ["method", "dev %"]
        + (["AdvGLUE score %"] if has_advglue else [])
        + [short_title(ev) + (" (under attack)" if ev["kind"] == "attack" else "") + " %" for ev in evaluations]
    )
    rows = []
    for label, m in summary["methods"].items():
        cells = [label, mean_pm(m["dev_accuracy"])]
        if has_advglue:
            cells.append(mean_pm(summary["advglue"].get(label, {}).get("score")))
        for ev in evaluations:
            row = next((r for r in ev["rows"] if r["method"] == label), None)
            cells.append(mean_pm(row["accuracy"]) + _mark(row.get("vs_baseline")) if row else "-")
        rows.append(cells)
    majority = (
        ["majority class", "-"]
        + (["-"] if has_advglue else [])
        + [pct(ev["majority"]["accuracy"]) if ev["majority"] else "-" for ev in evaluations]
    )
    if has_advglue:
        scores = [a["majority_score"] for a in summary["advglue"].values() if a["majority_score"] is not None]
        majority[2] = pct(scores[0]) if scores else "-"
    rows.append(majority)
    return Table(
        "Overview",
        columns,
        rows,
        [
            "Mean ± std over seeds. ▲ / ▼: above / below its baseline in every seed (paired, exact McNemar, "
            "alpha 0.05); no mark: no detectable difference, or not compared. Details in the tables below."
        ],
        section="overview",
    )


def all_tables(summary: dict) -> list[Table]:
    tables = [overview_table(summary)]
    claims = claims_table(summary)
    if claims:
        tables.append(claims)
    tables.append(methods_table(summary))
    adv = advglue_table(summary)
    if adv:
        tables.append(adv)
    tables += [evaluation_table(ev) for ev in summary["evaluations"]]
    tables += training_size_tables(summary) + probe_tables(summary)
    tables += [anchors_table(summary), deviations_table(summary)]
    return tables
