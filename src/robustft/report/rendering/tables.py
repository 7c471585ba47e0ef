"""The report's tables as plain rows of text, rendered by both the Markdown and the HTML writers.
Accuracies print as percentages with one decimal; intervals in brackets; n always beside them. Every interval is
the one `evaluation.intervals` chooses for its quantity, and each table's note names it (`INTERVAL_NOTE`): one
number, one interval, the same in the overview and the per-run tables."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from robustft.evaluation.advglue import TASKS as ADVGLUE_TASKS
from robustft.evaluation.intervals import ACCURACY_ONE_SEED, ACCURACY_SEEDS, DIFFERENCE_ONE_SEED, DIFFERENCE_SEEDS


@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)
    section: str = ""
    caption: str = ""  # the HTML page's line above the table (report.md keeps its own layout)


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


INTERVAL_NOTE = (
    f"95% intervals: a run's accuracy, the {ACCURACY_ONE_SEED}; a paired difference on one seed, the "
    f"{DIFFERENCE_ONE_SEED}; an accuracy or a difference over several seeds, the {ACCURACY_SEEDS} "
    "(docs/statistics.md). Where the data show no spread (0 of n, n of n, models that agree on every example) an "
    "interval keeps the width Wilson's interval gives 0 of n."
)


def per_seed(seeds: list[dict]) -> str:
    return "; ".join(f"{s['seed']}: {pct(s['accuracy'])} {interval(s['ci95'])} n={s['n']}" for s in seeds)


def comparison(vs: dict | None) -> str:
    if not vs:
        return "-"
    if not vs["per_seed"]:
        return vs["verdict"]
    if len(vs["per_seed"]) == 1:
        p = vs["per_seed"][0]  # the overview's interval, printed the same way
        return f"{signed_interval(p)} vs {vs['baseline']}, McNemar p={p['p_value']:.3g}, n={p['n']}: {vs['verdict']}"
    pooled = vs.get("pooled")
    if pooled:
        return (
            f"{signed_interval(pooled)} vs {vs['baseline']} over {pooled['n_seeds']} seeds, n={pooled['n']} "
            f"(per seed: {vs['verdict']})"
        )
    d = vs["difference"]
    return f"{'+' if d['mean'] >= 0 else ''}{mean_pm(d)} vs {vs['baseline']} (paired per seed): {vs['verdict']}"


def signed_interval(result: dict) -> str:
    """A difference in points with its interval, signed: "+4.5 [+2.2, +6.7]"; "-" where none was computed."""
    if result["ci95"] is None:
        return "-"
    low, high = result["ci95"]
    return f"{100 * result['difference']:+.1f} [{100 * low:+.1f}, {100 * high:+.1f}]"


def direction(result: dict) -> str:
    """The verdict word of a plain comparison (no paper's claim): the interval's side of 0."""
    low, high = result["ci95"]
    word = "higher" if low > 0 else "lower" if high < 0 else "no detectable difference"
    return word + (" (one seed: interval over examples only)" if result.get("basis") == "examples" else "")


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
        "per seed: accuracy [95% CI, Wilson] n",
    ]
    if attack:
        columns += ["clean on sample %", "success rate %", "perturbed words %", "queries"]
    columns.append("paired vs baseline: difference [95% CI], McNemar test, verdict")
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
    notes = [INTERVAL_NOTE + " The verdict per seed follows McNemar's exact test (alpha 0.05)."]
    maj = ev["majority"]
    if maj:
        notes.append(f"Majority-class baseline: {pct(maj['accuracy'])}% (always label {maj['label']}, n={maj['n']}).")
    if ev.get("duplicates"):
        notes.append(f"Left out as repeats of a method and seed already counted: {', '.join(ev['duplicates'])}.")
    if attack:
        notes.append("Accuracy under attack = examples still right after the attack / all attacked (TextAttack).")
        notes.append(
            "The last column counts only the examples both models got right before the attack: neither is credited "
            "for having fewer to defend. It conditions on the models' errors, so it is not a comparison at matched "
            "clean accuracy (that needs a baseline's clean-vs-robust frontier)."
        )
        errored = [f"{s['run']} ({s['num_errors']})" for row in ev["rows"] for s in row["seeds"] if s.get("num_errors")]
        if errored:
            notes.append(f"Left out of n: examples whose attack ended in an error, in {', '.join(errored)}.")
    if ev.get("chose_epochs"):
        notes.append(f"Selection set: {', '.join(ev['chose_epochs'])} chose the epoch on these data (optimistic).")
    return Table(ev["title"] + (" (selection)" if ev.get("chose_epochs") else ""), columns, rows, notes, ev["kind"])


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
                f"[{100 * d['ci95'][0]:+.1f}, {100 * d['ci95'][1]:+.1f}], {DIFFERENCE_ONE_SEED} (the official "
                f"score's per-example values, docs/statistics.md): {verdict}."
            )
        pooled = a.get("vs_baseline", {}).get("pooled")
        if pooled:
            notes.append(
                f"{label} - {a['vs_baseline']['baseline']} over {pooled['n_seeds']} seeds: "
                f"{signed_interval(pooled)} points ({pooled['basis_note']})."
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
        [f"Absolute numbers on {backbones(summary)} differ from the papers' backbones; compare directions and gains."],
        section="anchors",
    )


BACKBONE_NAMES = {"minilm": "MiniLM", "mpnet": "MPNet"}


def backbones(summary: dict) -> str:
    """The models the report's methods were fine-tuned from, by name ('MiniLM', 'MiniLM and MPNet')."""
    names = {BACKBONE_NAMES.get(m["model"], Path(m["model"]).name) for m in summary["methods"].values()}
    return " and ".join(sorted(names, key=str.lower)) or "these models"


def seeds_by_examples(c: dict) -> str:
    return f"{c['n_seeds']} x {c['n']}" if c.get("n") else str(c["n_seeds"])


def measured_on(c: dict) -> str:
    """Where a claim row was measured; for RIFT, the clean gap and the examples both models got right beside it."""
    parts = [c["measured_on"]]
    gap = c.get("clean_gap")
    if gap:
        parts.append(f"clean gap {signed_interval(gap)}")
    both = c.get("both_right_before")
    if both:
        parts.append(f"on the {both['n']} examples both got right before the attack {signed_interval(both)}")
    if c.get("basis_note") and c.get("n_seeds") == 1:
        parts.append(c["basis_note"])
    if c.get("majority"):
        parts.append(majority_words(c["majority"]))
    return "; ".join(parts)


def majority_words(majority: dict) -> str:
    """ "majority class 51.4%; im-exact 43.9, bert 44.6 (both below it)": an AdvGLUE row's floor beside it."""
    floor, found = majority["accuracy"], {k: v for k, v in majority["methods"].items() if v is not None}
    figures = ", ".join(f"{label} {pct(acc)}" for label, acc in found.items())
    below = [label for label, acc in found.items() if acc < floor]
    where = (
        "both below it"
        if len(below) == len(found) == 2
        else "all below it"
        if below and len(below) == len(found)
        else f"{', '.join(below)} below it"
        if below
        else "none below it"
    )
    return f"majority class {pct(floor)}%; {figures} ({where})"


CLAIM_COLUMNS = ["claim", "paper", "ours", "measured on", "difference, points [95% CI]", "seeds x examples", "verdict"]
CLAIMS_NOTE = (
    "Paired differences over seeds (training seeds and k-shot samples) with the interval that counts seeds as the "
    "replicates (docs/statistics.md). Reproduced: the interval excludes 0 (smaller than claimed: and rules out the "
    "paper's size); not reproduced: it rules out the paper's size (for a claimed direction: lies below 0); else "
    "inconclusive, with what would settle it. No verdict from one seed, an unfinished study or runs not committed, "
    "nor for RIFT against a baseline more accurate before the attack (the claim is at comparable clean accuracy)."
)


def claim_cells(c: dict) -> list[str]:
    return [
        c["claim"],
        f"{c['paper']} ({c['source']})",
        c["compared"],
        measured_on(c),
        signed_interval(c),
        seeds_by_examples(c),
        c["verdict"],
    ]


def claims_table(summary: dict) -> Table | None:
    rows = [claim_cells(c) for c in summary.get("claims", [])]
    if not rows:
        return None
    return Table("The papers' claims", CLAIM_COLUMNS, rows, [CLAIMS_NOTE], section="claims")


def joint_claims_table(summary: dict) -> Table | None:
    rows = [
        [
            j["compared"],
            j["measured_on"],
            str(j["n_seeds"]),
            j["verdict"],
            "; ".join(f"{status}: {', '.join(names)}" for status, names in j["failing"].items()) or "none",
            j["matched_clean"],
        ]
        for j in summary.get("joint_claims", [])
    ]
    if not rows:
        return None
    return Table(
        "RIFT's claim, jointly (every baseline under both attacks)",
        ["RIFT against", "measured on", "seeds", "joint verdict", "components that do not hold", "matched clean"],
        rows,
        [
            "Intersection-union: the claim holds only if every component (baseline/attack) holds at the 95% level; "
            "one refuted component refutes it. Components are the rows of the claims table, or of the frontier "
            "table for a verdict at matched clean accuracy."
        ],
        section="claims",
    )


def registered_verdict(pooled: dict, study: dict) -> str:
    """A registered comparison without a paper's size: its direction (the interval's side of 0), withheld like a
    claim's verdict from one seed, an unfinished study or runs not committed."""
    reasons = ["one seed (an interval over examples only says nothing about seeds)"] if pooled["n_seeds"] < 2 else []
    if not study.get("finished", True):
        reasons.append("the preset is unfinished" + (f" ({study['why']})" if study.get("why") else ""))
    if not study.get("runs_committed", True):
        reasons.append("the runs are not committed")
    if reasons:
        return "no verdict: " + "; ".join(reasons)
    low, high = pooled["ci95"]
    return f"{'higher' if low > 0 else 'lower'}: the interval excludes 0" if low > 0 or high < 0 else direction(pooled)


def _accuracies_beside(ev: dict, c: dict) -> str:
    """Both methods' accuracy (mean over seeds) and their baseline's: whether A - B moved A up or B down."""
    means = {r["method"]: r["accuracy"]["mean"] for r in ev["rows"]}
    mine = next((r for r in ev["rows"] if r["method"] == c["a"]), {})
    base = (mine.get("vs_baseline") or {}).get("baseline")
    shown = [c["a"], c["b"]] + ([base] if base and base not in (c["a"], c["b"]) else [])
    parts = [f"{label}{' (baseline)' if label == base else ''} {pct(means.get(label))}%" for label in shown]
    if ev["kind"] == "advglue" and ev.get("majority"):  # read against always the commonest label
        parts.append(f"majority class {pct(ev['majority']['accuracy'])}%")
    return ", ".join(parts)


def registered_rows(summary: dict) -> list[list[str]]:
    """[compared, measured on, difference [CI], seeds x examples, verdict] of each registered comparison."""
    study = summary.get("study") or {}
    return [
        [
            f"{c['a']} - {c['b']}",
            f"{measured_label(ev)} ({_accuracies_beside(ev, c)})",
            signed_interval(c["pooled"]),
            seeds_by_examples(c["pooled"]),
            registered_verdict(c["pooled"], study),
        ]
        for ev in summary["evaluations"]
        for c in ev.get("registered", [])
    ]


def registered_table(summary: dict) -> Table | None:
    rows = registered_rows(summary)
    if not rows:
        return None
    columns = ["compared", "measured on", "difference, points [95% CI]", "seeds x examples", "verdict"]
    note = (
        "Comparisons the study's settings registered beside those with its baseline, paired on the same examples "
        f"seed by seed; the interval is the {DIFFERENCE_SEEDS} (one seed: the {DIFFERENCE_ONE_SEED}; "
        "docs/statistics.md). No paper's size: the verdict is the interval's side of 0."
    )
    return Table("Registered comparisons", columns, rows, [note], section="claims")


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


def _clean_and_robust(entries: list[dict], name: str) -> str:
    def dropped(e: dict) -> str:
        return " (dropped: beaten on both)" if e.get("kept") is False else ""

    return "; ".join(f"{e[name]}: {pct(e['clean'])} / {pct(e['robust'])}{dropped(e)}" for e in entries) or "-"


def _holm(r: dict) -> str:
    if r.get("p_below") is None:
        return "-"
    return f"{r['p_below']:.3g} ({r['holm_level']:.3g})"


def frontier_table(summary: dict) -> Table | None:
    rows = [
        [
            r["compared"],
            r["recipe"],
            _clean_and_robust(r["points"], "label"),
            _clean_and_robust(r["rift_seeds"], "seed"),
            "; ".join(pct(x) for x in r.get("frontier_at", [])) or "-",
            signed_interval(r),
            r.get("carries") or "-",
            _holm(r),
            r["verdict"],
        ]
        for r in summary.get("frontier", [])
    ]
    if not rows:
        return None
    columns = [
        "RIFT against",
        "attack",
        "frontier (seed 0): clean / robust %",
        "RIFT seeds: clean / robust %",
        "frontier at RIFT's clean %",
        "RIFT - frontier, points [95% CI]",
        "the interval carries",
        "one-sided p (Holm's level)",
        "verdict",
    ]
    return Table("RIFT at matched clean accuracy (each baseline's frontier)", columns, rows, [FRONTIER_NOTE], "claims")


def _dominates(d: dict) -> str:
    if not d["dominates"]:
        return "no"
    return "yes" if d["refutes"] else "yes (no verdict: one seed or an unfinished study)"


def dominance_table(summary: dict) -> Table | None:
    """Rule 1 of the frontier study: a baseline model at least as accurate as RIFT clean and under the attack."""
    rows = [
        [
            f"{d['rift']} - {d['baseline']}",
            d["recipe"],
            signed_interval(d["clean"]),
            signed_interval(d["attack"]),
            _dominates(d),
            d["carries"],
        ]
        for d in summary.get("dominance", [])
    ]
    if not rows:
        return None
    columns = ["compared", "attack", "clean, points [95% CI]", "under attack, points [95% CI]", "dominates", "carries"]
    note = (
        "A baseline at least as accurate as RIFT clean (whole test split) and under the attack (its sample), paired "
        "on the same examples, with neither interval of RIFT - baseline above 0, refutes RIFT > that baseline without "
        "any frontier (configs/rift-frontier-sst2.yaml, rule 1)."
    )
    return Table("RIFT against each baseline model: dominance", columns, rows, [note], "claims")


def deviations_table(summary: dict) -> Table:
    def runs(names):
        return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")

    rows = [[d["text"], d["source"], runs(d["runs"])] for d in summary["deviations"]]
    return Table("Deviations from the papers' protocols", ["deviation", "source", "runs"], rows, section="deviations")


TASK_NAMES = {"sst2": "SST-2", "snli": "SNLI", "mnli": "MNLI", "qnli": "QNLI", "qqp": "QQP", "rte": "RTE"}
TASK_NAMES |= {"imdb": "IMDB", "ag_news": "AG News", "mr": "MR"}


RECIPE_NAMES = {"pwws": "PWWS", "textfooler": "TextFooler", "ascc": "ASCC attack", "bert-attack": "BERT-Attack"}
RECIPE_NAMES |= {"textbugger": "TextBugger", "genetic": "genetic"}


def task_name(task: str | None) -> str:
    if task and task.startswith("advglue-"):
        return (
            "AdvGLUE "
            + task_name(task.removeprefix("advglue-").removesuffix("-mm"))
            + (" mismatched" if task.endswith("-mm") else "")
        )
    return TASK_NAMES.get(task or "", task or "-")


def measured_label(ev: dict) -> str:
    """What an evaluation measured, in words a newcomer reads: "SST-2 dev (selection)" when that data chose an
    epoch, "PWWS (rift protocol) on SST-2 test, 1,000 examples" for an attack."""
    data = f"{task_name(ev['task'])} {ev['split']}" + (" (selection)" if ev.get("chose_epochs") else "")
    sample = f", {ev['n']:,} examples" if ev.get("n") else ""
    if ev["kind"] == "attack":
        protocol = f" ({ev['protocol']} protocol)" if ev.get("protocol") else ""
        return f"{RECIPE_NAMES.get(ev['recipe'], ev['recipe'])}{protocol} on {data}{sample}"
    return data + sample


def _accuracy_cells(row: dict) -> list[str]:
    pooled, seeds = row.get("pooled"), row["seeds"]
    if pooled:
        return [f"{pct(pooled['difference'])} {interval(pooled['ci95'])}", f"{pooled['n_seeds']} x {pooled['n']}"]
    if len(seeds) == 1:
        return [f"{pct(seeds[0]['accuracy'])} {interval(seeds[0]['ci95'])}", f"1 x {seeds[0]['n']}"]
    return [f"{mean_pm(row['accuracy'])} (mean ± std)", f"{len(seeds)} x {seeds[0]['n']}"]


def _versus_cells(row: dict, baselines: set[str]) -> list[str]:
    vs = row.get("vs_baseline")
    if vs and vs.get("pooled"):
        return [f"{signed_interval(vs['pooled'])} vs {vs['baseline']}", direction(vs["pooled"])]
    if vs:
        return [f"- vs {vs['baseline']}", vs["verdict"]]
    return ["(baseline)" if row["method"] in baselines else "-", ""]


def _evaluation_rows(ev: dict) -> list[list[str]]:
    baselines = {r["vs_baseline"]["baseline"] for r in ev["rows"] if r.get("vs_baseline")}
    ordered = sorted(ev["rows"], key=lambda r: r["method"] not in baselines)  # the baseline first
    label = measured_label(ev)
    rows = [[label, r["method"], *_accuracy_cells(r), *_versus_cells(r, baselines)] for r in ordered]
    if ev["kind"] == "advglue" and ev["majority"]:  # the floor an AdvGLUE split's accuracy is read against
        maj = ev["majority"]
        rows.append([label, f"majority class (always {maj['label']})", pct(maj["accuracy"]), f"- x {maj['n']}", "", ""])
    return rows


def _advglue_score_rows(summary: dict) -> list[list[str]]:
    rows, majority = [], None
    for label, a in summary["advglue"].items():
        if a["score"]["mean"] is None:
            continue
        pooled = (a.get("vs_baseline") or {}).get("pooled")
        versus = (
            [f"{signed_interval(pooled)} vs {a['vs_baseline']['baseline']}", direction(pooled)] if pooled else ["", ""]
        )
        rows.append(
            [
                "AdvGLUE official score (dev)",
                label,
                f"{mean_pm(a['score'])} (mean ± std)",
                f"{len(a['seeds'])} seed{'s' if len(a['seeds']) > 1 else ''}",
                *versus,
            ]
        )
        majority = majority if majority is not None else a["majority_score"]
    if rows and majority is not None:
        rows.append(["AdvGLUE official score (dev)", "majority class", pct(majority), "-", "", ""])
    return rows


def _certified_definition(row: dict, figure: dict) -> str:
    d = figure["changed_words"]
    if d is None:
        return f"{row['defense']}: every word within its perturbation set"
    return f"{row['defense']}: {d} changed word{'s' if d != 1 else ''}"


VOTE_COLUMN = "clean accuracy of the certified (vote) classifier"


def _vote_cells(acc: dict | None) -> list[str]:
    """The vote classifier's clean accuracy with its interval, and its n; "-" for runs without it."""
    if not acc or acc.get("accuracy") is None:
        return ["-", "-"]
    return [f"{pct(acc['accuracy'])} {interval(acc['ci95'])}", str(acc["n"])]


def certified_table(summary: dict) -> Table | None:
    """Per certified eval run, each certified accuracy with its interval and n (RanMASK: one row per number of
    changed words); None when no run carries certificates."""
    found = summary.get("certified") or []
    if not found:
        return None
    seeds: dict[str, set[str]] = {}
    for r in found:
        seeds.setdefault(r["method"], set()).add(r["seed"])
    rows = []
    for r in found:
        method = r["method"] + (f" ({r['seed']})" if len(seeds[r["method"]]) > 1 else "")
        data = {"kind": "clean", **r, "chose_epochs": [r["method"]] if r["selection"] else []}
        setting = f"{r['copies'] if r['copies'] is not None else '-'} / {r['samples']:,} / {100 * r['confidence']:g}%"
        rows += [
            [
                method,
                measured_label(data),
                f"{pct(f['accuracy'])} {interval(f['ci95'])}",
                str(f["n"]),
                *_vote_cells(r.get("vote_accuracy")),
                _certified_definition(r, f),
                setting,
            ]
            for f in r["figures"]
        ]
    notes = [f"{d}: {text}." for d, text in sorted({(r["defense"], r["definition"]) for r in found})]
    notes.append(
        "Certified: the true label's vote share over the samples' noisy copies, at its one-sided Clopper-Pearson "
        "lower bound at the stated confidence, exceeds 1/2 by more than the threat model can move it. The 95% "
        f"interval is the {ACCURACY_ONE_SEED} (0 of n keeps a width); the ensemble's copies are those its "
        "predictions average."
    )
    notes.append(
        f"{VOTE_COLUMN}: the share of the examples the majority vote over the certificate's copies gets right, the "
        "classifier the certificate is about (the plain accuracy is the ensemble's default prediction's); same "
        "interval. -: a run certified before it was recorded."
    )
    columns = ["method", "measured on", "certified accuracy % [95% CI]", "n", f"{VOTE_COLUMN} % [95% CI]", "n"]
    columns += ["definition", "ensemble copies / samples / confidence"]
    return Table("Certified accuracy", columns, rows, notes, "certified")


def overview_table(summary: dict) -> Table:
    """One row per evaluation and method: accuracy with its interval and n, the difference to its baseline (the
    bench's first method) with its interval and the verdict word; the majority class beside AdvGLUE only."""
    rows = [row for ev in summary["evaluations"] for row in _evaluation_rows(ev)] + _advglue_score_rows(summary)
    return Table(
        "Overview",
        [
            "measured on",
            "method",
            "accuracy % [95% CI]",
            "seeds x examples",
            "minus baseline, points [95% CI]",
            "verdict",
        ],
        rows,
        [
            INTERVAL_NOTE + " Intervals over one seed cover the examples only. (selection): the data that chose the "
            "models' epochs, so optimistic. higher / lower: the interval of the paired difference excludes 0."
        ],
        section="overview",
    )


def all_tables(summary: dict) -> list[Table]:
    tables = [overview_table(summary)]
    tables += [t for t in (claims_table(summary), registered_table(summary)) if t]
    tables += [t for t in (joint_claims_table(summary), frontier_table(summary), dominance_table(summary)) if t]
    tables += [t for t in (certified_table(summary),) if t is not None]
    tables.append(methods_table(summary))
    adv = advglue_table(summary)
    if adv:
        tables.append(adv)
    tables += [evaluation_table(ev) for ev in summary["evaluations"]]
    tables += training_size_tables(summary) + probe_tables(summary)
    tables += [anchors_table(summary), deviations_table(summary)]
    return tables


def baselines_paired(summary: dict) -> list[str]:
    """The baselines the differences were taken against (the summary's rule picks one per model, task and size)."""
    named = [
        row["vs_baseline"]["baseline"] for ev in summary["evaluations"] for row in ev["rows"] if row.get("vs_baseline")
    ]
    named += [a["vs_baseline"]["baseline"] for a in summary["advglue"].values() if a.get("vs_baseline")]
    return sorted(set(named))


def overview_for_page(summary: dict) -> Table:
    """The overview with the baseline named in its caption and, where there is one, in the difference's column."""
    table = overview_table(summary)
    named = baselines_paired(summary)
    if len(named) == 1:
        table.columns[4] = f"minus {named[0]}, points [95% CI]"
    table.caption = (
        f"Baseline: {summary['baseline']}"
        + (f"; paired here against {', '.join(named)}" if named else "; nothing was paired")
        + ". Each accuracy with its 95% interval (one seed: Wilson's; several: counting seeds); a difference's "
        "interval is the paired t over the examples for one seed, counting seeds for several; n = seeds x examples."
    )
    return table


def unrun_in_one_line(table: Table, what: str) -> Table:
    """`table` without its rows whose last cell is "not run", counted in one note by their first cell instead (the
    published anchors: most are for tasks and backbones a study did not run)."""
    unrun = [row for row in table.rows if row[-1] == "not run"]
    if not unrun:
        return table
    groups = {row[0]: sum(r[0] == row[0] for r in unrun) for row in unrun}
    note = f"Not run: {len(unrun)} of {len(table.rows)} {what} ({', '.join(f'{g} {n}' for g, n in groups.items())})."
    kept = [row for row in table.rows if row[-1] != "not run"]
    return Table(table.title, table.columns, kept, [note, *table.notes], table.section, table.caption)


def page_tables(summary: dict) -> list[Table]:
    """`all_tables` as the HTML page shows them: the overview naming its baseline, unrun anchors in one line."""
    pages = {"overview": overview_for_page(summary), "anchors": unrun_in_one_line(anchors_table(summary), "anchors")}
    return [pages.get(t.section, t) for t in all_tables(summary)]
