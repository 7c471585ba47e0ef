"""The report's tables as plain rows of text, rendered by both the Markdown and the HTML writers.
Accuracies print as percentages with one decimal; intervals in brackets; n always beside them. Every interval is
the one `evaluation.intervals` chooses for its quantity, and each table's note names it (`INTERVAL_NOTE`): one
number, one interval, the same in the overview and the per-run tables."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from robustft.evaluation.advglue import TASKS as ADVGLUE_TASKS
from robustft.evaluation.intervals import ACCURACY_ONE_SEED, ACCURACY_SEEDS, DIFFERENCE_ONE_SEED


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
        time, size = m["train_time_s"], m["size"] + (f" ({m['n_train']})" if m["n_train"] else "")
        dev = dev if m["dev_accuracy"]["mean"] is not None else "-"
        rows.append([label, m["model"], m["task"], size, str(len(m["seeds"])), dev])
        rows[-1].append(f"{time['mean']:.0f}" if time["mean"] is not None else "-")
    columns = ["method", "model", "trained on", "size", "seeds", "dev accuracy % (mean ± std)", "train time s"]
    note = f"Baseline for paired comparisons: {summary['baseline']}. Model selection on dev only."
    return Table("Methods", columns, rows, [note], section="methods")


def _mean_of(seeds: list[dict], key: str) -> str:
    values = [s[key] for s in seeds if s.get(key) is not None]
    return f"{sum(values) / len(values):.1f}" if values else "-"


def _evaluation_cells(row: dict, attack: bool) -> list[str]:
    cells = [row["method"], str(len(row["seeds"])), mean_pm(row["accuracy"]), per_seed(row["seeds"])]
    if attack:
        cells.append(mean_pm(row.get("clean")))
        cells += [
            _mean_of(row["seeds"], k) for k in ("attack_success_rate", "avg_perturbed_word_pct", "avg_num_queries")
        ]
    cells.append(comparison(row.get("vs_baseline")))
    return cells + ([comparison((row.get("vs_baseline") or {}).get("both_right_before"))] if attack else [])


def evaluation_table(ev: dict) -> Table:
    attack = ev["kind"] == "attack"
    columns = ["method", "seeds", ("under attack" if attack else "accuracy") + " % (mean ± std)"]
    columns.append("per seed: accuracy [95% CI, Wilson] n")
    columns += ["clean on sample %", "success rate %", "perturbed words %", "queries"] if attack else []
    columns.append("paired vs baseline: difference [95% CI], McNemar test, verdict")
    columns += ["the same on the examples both got right before the attack"] if attack else []
    rows = [_evaluation_cells(row, attack) for row in ev["rows"]]
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
    rows, notes, majority = [], [], None
    for label, a in summary["advglue"].items():
        rows.append(
            [label, str(a["seeds_run"]), mean_pm(a["score"]), *(mean_pm(a["tasks"].get(t)) for t in ADVGLUE_TASKS)]
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
    columns = ["method", "seeds", "score %"] + [t.upper() for t in ADVGLUE_TASKS]
    return Table("AdvGLUE official score (dev)", columns, rows, notes, section="advglue")


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


BACKBONE_NAMES = {"minilm": "MiniLM", "mpnet": "MPNet"}


def backbones(summary: dict) -> str:
    """The models the report's methods were fine-tuned from, by name ('MiniLM', 'MiniLM and MPNet')."""
    names = {BACKBONE_NAMES.get(m["model"], Path(m["model"]).name) for m in summary["methods"].values()}
    return " and ".join(sorted(names, key=str.lower)) or "these models"


def seeds_by_examples(c: dict) -> str:
    return f"{c['n_seeds']} x {c['n']}" if c.get("n") else str(c["n_seeds"])


TASK_NAMES = {"sst2": "SST-2", "snli": "SNLI", "mnli": "MNLI", "qnli": "QNLI", "qqp": "QQP", "rte": "RTE"}
TASK_NAMES |= {"imdb": "IMDB", "ag_news": "AG News", "mr": "MR"}


RECIPE_NAMES = {"pwws": "PWWS", "textfooler": "TextFooler", "ascc": "ASCC attack", "bert-attack": "BERT-Attack"}
RECIPE_NAMES |= {"textbugger": "TextBugger", "genetic": "genetic"}


def task_name(task: str | None) -> str:
    if task and task.startswith("advglue-"):
        one = task_name(task.removeprefix("advglue-").removesuffix("-mm"))
        return f"AdvGLUE {one}{' mismatched' if task.endswith('-mm') else ''}"
    return TASK_NAMES.get(task or "", task or "-")


def measured_label(ev: dict) -> str:
    """What an evaluation measured, in words a newcomer reads: "SST-2 dev (selection)" when that data chose an
    epoch, "TextFooler on SST-2 test, 1,000 examples" for an attack."""
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
        vote = _vote_cells(r.get("vote_accuracy"))
        for f in r["figures"]:
            figure = [f"{pct(f['accuracy'])} {interval(f['ci95'])}", str(f["n"])]
            rows.append([method, measured_label(data), *figure, *vote, _certified_definition(r, f), setting])
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
    columns = ["measured on", "method", "accuracy % [95% CI]", "seeds x examples", "minus baseline, points [95% CI]"]
    note = INTERVAL_NOTE + (
        " Intervals over one seed cover the examples only. (selection): the data that chose the models' epochs, so "
        "optimistic. higher / lower: the interval of the paired difference excludes 0."
    )
    return Table("Overview", [*columns, "verdict"], rows, [note], section="overview")


def baselines_paired(summary: dict) -> list[str]:
    """The baselines the differences were taken against (the summary's rule picks one per model, task and size)."""
    paired = [row for ev in summary["evaluations"] for row in ev["rows"]] + list(summary["advglue"].values())
    return sorted({row["vs_baseline"]["baseline"] for row in paired if row.get("vs_baseline")})


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


def all_tables(summary: dict, lead: list[Table] = (), end: list[Table] = ()) -> list[Table]:
    """The report's tables in order: the overview, `lead` (the claims plug-ins' verdicts), the data's tables, then
    `end` (the plug-ins' reference material)."""
    tables = [overview_table(summary), *lead]
    tables += [t for t in (certified_table(summary),) if t is not None]
    tables.append(methods_table(summary))
    tables += [t for t in (advglue_table(summary),) if t is not None]
    tables += [evaluation_table(ev) for ev in summary["evaluations"]]
    return tables + training_size_tables(summary) + probe_tables(summary) + list(end)


def page_tables(summary: dict, lead: list[Table] = (), end: list[Table] = ()) -> list[Table]:
    """`all_tables` as the HTML page shows them: the overview naming its baseline."""
    return [overview_for_page(summary) if t.section == "overview" else t for t in all_tables(summary, lead, end)]
