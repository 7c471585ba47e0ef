"""The report's content as one JSON-able dict (report.json), computed from run folders only.

Runs are grouped by the model they concern ("methods", seeds pooled as mean +- std), evaluations by what
was measured (task, split, sample, recipe). Every accuracy carries n and a 95% interval; every method is
compared paired with its baseline (default: plain architecture + standard fine-tuning of the same model,
task and training size) on the same example ids, seed by seed, and over seeds with the interval that counts
seeds as the replicates (`evaluation.intervals`, docs/statistics.md).
"""

from __future__ import annotations

import dataclasses
import json

from robustft.errors import ConfigError
from robustft.evaluation import advglue
from robustft.evaluation.advglue_intervals import score_difference_over_seeds
from robustft.evaluation.intervals import accuracy_over_seeds, paired_difference_over_seeds
from robustft.evaluation.stats import NO_DIFFERENCE, mean_std, paired_comparison
from robustft.report.certified import certified_rows, is_certified
from robustft.report.folders import Run
from robustft.report.method_keys import MethodKey, key_of, labels_for, seed_of, size_of
from robustft.report.registry import add_claims
from robustft.report.run_accuracy import majority_of, outcomes, right_before_attack, run_figures
from robustft.report.selection import chose_epoch

REPORT_VERSION = 1


def method_of(run: Run) -> MethodKey:
    return key_of(run.model_config, fallback_model=str(run.config.get("model", run.name)))


def evaluation_of(run: Run) -> tuple:
    cfg = run.config
    n = cfg.get("n", cfg.get("num_examples"))
    seed = cfg.get("seed", 0) if n else None  # the sample seed matters only for a sample
    if run.verb == "attack":
        return ("attack", cfg.get("task"), cfg.get("split"), cfg.get("recipe"), cfg.get("protocol"), n, seed)
    kind = "advglue" if str(cfg.get("task", "")).startswith("advglue-") else "clean"
    return (kind, cfg.get("task"), cfg.get("split"), None, None, n, seed)


def evaluation_title(key: tuple) -> str:
    kind, task, split, recipe, protocol, n, seed = key
    sample = f"n={n}, sample seed {seed}" if n else "all examples"
    if kind == "attack":
        return f"{recipe}{f' ({protocol})' if protocol else ''} on {task} {split} ({sample})"
    return f"{task} {split} ({sample})"


KIND_ORDER = {"clean": 0, "advglue": 1, "attack": 2}


def _sort_key(value) -> tuple:
    return (KIND_ORDER[value[0]],) + tuple((v is None, str(v)) for v in value[1:])


def standing(
    finished: bool = True,
    runs_committed: bool = True,
    why: str = "",
    comparisons: list | tuple = (),
    frontier_studies: dict[str, str] | None = None,
) -> dict:
    """Whether the study the runs come from may carry verdicts (SPEC section 7: none from an unfinished preset or
    runs that are not committed), and why not in words (e.g. "still running, 147 of 189 jobs"). `comparisons`: the
    pairs (A, B) of method labels its settings registered beside those with the baseline (each evaluation then
    gives A - B paired, `registered`); `frontier_studies`: by task, the study that traces the baselines' frontiers
    (RIFT's joint rows name it); each left out of the dict when there are none."""
    out = {"finished": finished, "runs_committed": runs_committed, "why": why}
    out |= {"frontier_studies": dict(frontier_studies)} if frontier_studies else {}
    return out | ({"comparisons": [list(pair) for pair in comparisons]} if comparisons else {})


def build_summary(
    runs: list[Run], baseline: str | None = None, bench_baseline: bool = False, study: dict | None = None
) -> dict:
    """`bench_baseline`: the baseline is a method of the bench the runs come from, which may have no finished run
    yet (a bench part-way); the report then pairs nothing and says so. Otherwise an unknown baseline is an error.
    `study`: its `standing` (default: finished, runs committed; a plain report judges what it is given)."""
    keyed = [(run, method_of(run)) for run in runs if run.verb in ("train", "eval", "attack")]
    labels = labels_for(sorted({k for _, k in keyed}, key=repr))
    by_label = {label: key for key, label in labels.items()}
    absent = baseline is not None and baseline not in by_label and all(k.label != baseline for k in by_label.values())
    if absent and not bench_baseline:
        raise ConfigError(f"baseline '{baseline}' is not a method of these runs: {', '.join(sorted(by_label))}")

    study = study or standing()
    methods = _methods(keyed, labels)
    evaluations = _evaluations(keyed, labels, by_label, baseline, study.get("comparisons", []))
    for ev in evaluations:  # its accuracy there is optimistic: labelled, and no claim rests on it
        ev["chose_epochs"] = sorted(
            r["method"] for r in ev["rows"] if chose_epoch(methods[r["method"]], ev["task"], ev["split"])
        )
    summary = {
        "robustft_report": REPORT_VERSION,
        "runs": [_listed(r, labels) for r in runs],
        "baseline": f"{baseline} (no run of it has finished yet: nothing is paired)"
        if absent
        else baseline or "plain+standard (same model, task and training size)",
        "methods": methods,
        "evaluations": evaluations,
        "advglue": _advglue(keyed),
        "training_size": _training_size(methods, evaluations),
        "probes": _probes(runs),
        "study": study,
    }
    certified = certified_rows(keyed, labels, methods)
    if certified:  # a report without certificates stays as it was
        summary["certified"] = certified
    by_name = {r.name: r for r, _ in keyed}  # a plug-in may read per-example outcomes (RIFT's frontier does)
    add_claims(summary, runs, lambda name: outcomes(by_name[name]) if name in by_name else None)
    return summary


def _listed(run: Run, labels: dict[MethodKey, str]) -> dict:
    """A run as report.json lists it: its name, verb, hash, and the method and seed it concerns (none for a probe)."""
    probe = run.verb == "probe"
    method, seed = (None, None) if probe else (labels.get(method_of(run)), seed_of(run.model_config))
    return {"name": run.name, "verb": run.verb, "hash": run.meta.get("hash"), "method": method, "seed": seed}


def _methods(keyed: list[tuple[Run, MethodKey]], labels: dict[MethodKey, str]) -> dict:
    out = {}
    for key, label in sorted(labels.items(), key=lambda kv: kv[1]):
        mine = [r for r, k in keyed if k == key]
        trains = [r for r in mine if r.verb == "train"]
        any_cfg = next((r.model_config for r in mine if r.model_config), None) or {}
        size_label, size_n = size_of(any_cfg) if any_cfg else ("-", None)
        n_trains = [r.metrics.get("n_train") for r in trains if r.metrics.get("n_train") is not None]
        best = [r.metrics.get("best", {}) for r in trains]
        out[label] = {
            "model": key.model,
            "task": key.task,
            "arch": key.arch,
            "method": key.method,
            "method_args": any_cfg.get("method_args") or {},
            "im": (any_cfg.get("im") or {}) if key.arch != "plain" else {},
            "size": size_label,
            "n_train": size_n if size_n is not None else (n_trains[0] if n_trains else None),
            "dev_split": any_cfg.get("dev_split") or "dev" if any_cfg else None,  # the data that chose its epoch
            "baseline_group": key.is_baseline,
            "seeds": sorted({seed_of(r.model_config) for r in mine}),
            "dev_accuracy": mean_std([b["dev_accuracy"] for b in best if b.get("dev_accuracy") is not None]),
            "dev_n": next((b.get("dev_n") for b in best if b.get("dev_n") is not None), None),
            "best_epoch": [b.get("epoch") for b in best],
            "train_time_s": mean_std([r.metrics["train_time_s"] for r in trains if "train_time_s" in r.metrics]),
            "train_runs": [r.name for r in trains],
        }
    return out


def _baseline_key(key: MethodKey, by_label: dict[str, MethodKey], chosen: str | None) -> MethodKey | None:
    if chosen is not None:
        if chosen in by_label:
            return by_label[chosen] if by_label[chosen] != key else None
        for other in by_label.values():  # a given name: the run of that name with the same model, task and size
            if other.label == chosen and (other.model, other.task, other.size) == (key.model, key.task, key.size):
                return other if other != key else None
        return None
    if key.is_baseline:
        return None
    for other in by_label.values():
        if (
            other.is_baseline
            and (other.model, other.task, other.size) == (key.model, key.task, key.size)
            and other.method_args == "{}"
        ):
            return other
    return None


def _evaluations(keyed, labels, by_label, baseline, comparisons=()) -> list[dict]:
    groups: dict[tuple, list[tuple[Run, MethodKey]]] = {}
    for run, key in keyed:
        if run.verb in ("eval", "attack"):
            groups.setdefault(evaluation_of(run), []).append((run, key))
    out = []
    for ev_key in sorted(groups, key=_sort_key):
        members = groups[ev_key]
        runs_of, duplicates = {}, []
        # a certified eval's predictions are those of a plain eval of the same model and data: where both ran, the
        # plain one counts and the certified one shows only in the certified table (not as a repeat)
        for run, key in sorted(members, key=lambda rk: (is_certified(rk[0]), rk[0].name)):
            mine = runs_of.setdefault(key, {})
            seed = seed_of(run.model_config)
            if seed in mine:  # the same measurement twice (e.g. rerun into another folder): the first counts
                duplicates += [] if is_certified(run) else [run.name]
                continue
            mine[seed] = run
        rows = []
        for key in sorted(runs_of, key=lambda k: labels[k]):
            seeds = [{"seed": s, "run": r.name, **run_figures(r)} for s, r in sorted(runs_of[key].items())]
            row = {
                "method": labels[key],
                "seeds": seeds,
                "accuracy": mean_std([s["accuracy"] for s in seeds if s["accuracy"] is not None]),
                "pooled": _pooled_accuracy(runs_of[key]),
            }
            if ev_key[0] == "attack":
                row["clean"] = mean_std([s["clean"]["accuracy"] for s in seeds if s.get("clean")])
            base = _baseline_key(key, by_label, baseline)
            if base is not None and base in runs_of:
                row["vs_baseline"] = _compare(runs_of[key], runs_of[base], labels[key], labels[base])
                if ev_key[0] == "attack":
                    # a model that is right on fewer examples has fewer to defend: this one holds clean accuracy equal
                    row["vs_baseline"]["both_right_before"] = _compare(
                        runs_of[key], runs_of[base], labels[key], labels[base], both_right_before=True
                    )
            rows.append(row)
        extra = {"registered": _registered(runs_of, by_label, comparisons)} if comparisons else {}
        measured = dict(zip(("kind", "task", "split", "recipe", "protocol", "n", "sample_seed"), ev_key, strict=True))
        measured |= {"title": evaluation_title(ev_key), "majority": majority_of([r for r, _ in members])}
        out.append(measured | {"rows": rows, "duplicates": duplicates, **extra})
    return out


def _registered(runs_of: dict, by_label: dict[str, MethodKey], comparisons) -> list[dict]:
    """The registered comparisons (A, B) both of whose methods this evaluation measured: A - B paired over the seeds
    both ran, with the interval that counts seeds (one seed: over examples only)."""
    out = []
    for a, b in comparisons:
        ka, kb = by_label.get(a), by_label.get(b)
        if ka not in runs_of or kb not in runs_of:
            continue
        vs = _compare(runs_of[ka], runs_of[kb], a, b)
        if vs["pooled"] is not None:
            out.append({"a": a, "b": b, "pooled": vs["pooled"]})
    return out


def _pooled_accuracy(mine: dict[str, Run]) -> dict | None:
    """The accuracy over every seed, on the examples all of them scored, with the interval that counts seeds (the
    mean of a seeds x examples table of 0/1 outcomes; one seed: Wilson's, as in its per-run row); None without
    per-example files (`intervals.accuracy_over_seeds`)."""
    found = [outcomes(run) for run in mine.values()]
    if not found or any(f is None for f in found):
        return None
    ids = sorted(set.intersection(*(set(f) for f in found)))
    if len(ids) < 2:
        return None
    return accuracy_over_seeds([[float(f[i]) for i in ids] for f in found])


def _clean_gap(mine: dict[str, Run], base: dict[str, Run]) -> dict | None:
    """Of an attack: the paired difference in clean accuracy on the attacked examples (right before the attack),
    over the seeds both ran: how far apart in clean accuracy the two models are where their robustness is compared."""
    paired = {}
    for seed in sorted(set(mine) & set(base)):
        a, b = right_before_attack(mine[seed]), right_before_attack(base[seed])
        scored_a, scored_b = outcomes(mine[seed]), outcomes(base[seed])
        if a is None or b is None or scored_a is None or scored_b is None:
            continue
        ids = set(scored_a) & set(scored_b)
        paired[seed] = ({i: i in a for i in ids}, {i: i in b for i in ids})
    return _pooled(paired)


def _compare(
    mine: dict[str, Run], base: dict[str, Run], label: str, base_label: str, both_right_before: bool = False
) -> dict:
    """Paired comparisons on the seeds both methods ran, each on the example ids both runs scored (with
    `both_right_before`, of an attack: only those both models got right before it)."""
    per_seed, missing, paired = [], [], {}
    for seed in sorted(set(mine) & set(base)):
        a, b = outcomes(mine[seed]), outcomes(base[seed])
        if a is None or b is None:
            missing.append(seed)
            continue
        ids = set(a) & set(b)
        if both_right_before:
            ids &= right_before_attack(mine[seed]) & right_before_attack(base[seed])
        ids = sorted(ids)
        if not ids:
            missing.append(seed)
            continue
        result = paired_comparison([a[i] for i in ids], [b[i] for i in ids], names=(label, base_label))
        per_seed.append({"seed": seed, **result})
        paired[seed] = ({i: a[i] for i in ids}, {i: b[i] for i in ids})
    verdicts = [p["verdict"] for p in per_seed]
    if not per_seed:
        summary = "not paired (no per-example files for a common seed)"
    elif len(set(verdicts)) == 1:
        summary = verdicts[0] + (f" ({len(verdicts)}/{len(verdicts)} seeds)" if len(verdicts) > 1 else "")
    else:
        counts = {v: verdicts.count(v) for v in dict.fromkeys(verdicts)}
        summary = "mixed: " + ", ".join(f"{v} in {c}/{len(verdicts)}" for v, c in counts.items())
    out = {
        "baseline": base_label,
        "per_seed": per_seed,
        "unpaired_seeds": missing,
        "difference": mean_std([p["difference"] for p in per_seed]),
        "verdict": summary,
        "detected": len(set(verdicts)) == 1 and verdicts[0] != NO_DIFFERENCE,
        "pooled": _pooled(paired),
    }
    attack = any(run.verb == "attack" for run in mine.values())
    if attack and not both_right_before:
        out["clean_gap"] = _clean_gap(mine, base)
    return out


def _pooled(paired: dict) -> dict | None:
    """Every paired seed at once, on the examples all of them scored, with the interval that counts seeds as the
    replicates (`intervals.paired_difference_over_seeds`; one seed: an interval over examples only, labelled so)."""
    if not paired:
        return None
    ids = sorted(set.intersection(*(set(a) & set(b) for a, b in paired.values())))
    if len(ids) < 2:
        return None
    table = [[float(a[i]) - float(b[i]) for i in ids] for a, b in paired.values()]
    return paired_difference_over_seeds(table)


def _advglue(keyed) -> dict:
    """The official score per method and seed, where a seed has all six AdvGLUE splits with examples.

    The benchmark fine-tunes one model per task (SST-2's model scores advglue-sst2, MNLI's both MNLI splits), so a
    method here is its training config without the task."""
    cross = {key: dataclasses.replace(key, task="*") for _, key in keyed}
    labels = labels_for(list(dict.fromkeys(cross.values())))
    found: dict[MethodKey, dict[str, dict[str, tuple]]] = {}
    for run, key in keyed:
        split = str(run.config.get("task", ""))
        if run.verb == "eval" and split in advglue.SPLITS and run.examples is not None and not run.config.get("n"):
            preds = [int(e["prediction"]) for e in run.examples]
            gold = [int(e["label"]) for e in run.examples]
            found.setdefault(cross[key], {}).setdefault(seed_of(run.model_config), {})[split] = (preds, gold)
    scores = {
        key: {s: advglue.official_score(splits) for s, splits in sorted(seeds.items())} for key, seeds in found.items()
    }
    complete = {key: {s: r for s, r in scored.items() if r["score"] is not None} for key, scored in scores.items()}
    out = {}
    for key, seeds in found.items():
        scored = scores[key]
        complete_scores = complete[key]
        first = next(iter(scored.values()))
        out[labels[key]] = {
            "model": key.model,
            "arch": key.arch,
            "method": key.method,
            "size": key.size,
            "seeds_run": len(scored),  # seeds with any AdvGLUE split, complete or not
            "seeds": [{"seed": s, "score": r["score"], "tasks": r["tasks"]} for s, r in complete_scores.items()],
            "score": mean_std([r["score"] for r in complete_scores.values()]),
            "tasks": {t: mean_std([r["tasks"][t] for r in scored.values() if t in r["tasks"]]) for t in advglue.TASKS},
            "majority_score": next((r["majority_score"] for r in complete_scores.values()), None),
            "majority_tasks": first["majority_tasks"],
            "missing": sorted({t for r in scored.values() for t in r["missing"]}),
        }
        base = next((k for k in found if k.is_baseline and (k.model, k.size) == (key.model, key.size)), None)
        if base is not None and base != key:
            both = [s for s in complete[key] if s in complete[base]]
            out[labels[key]]["vs_baseline"] = {
                "baseline": labels[base],
                "per_seed": [{"seed": s, **_advglue_one_seed(seeds[s], found[base][s])} for s in both],
                "pooled": score_difference_over_seeds([(seeds[s], found[base][s]) for s in both]) if both else None,
            }
    return dict(sorted(out.items()))


def _advglue_one_seed(a: dict, b: dict) -> dict:
    """One seed's official score difference with the interval the pooled row gives one seed (paired t over the
    examples, `advglue_intervals`): one interval per number."""
    result = score_difference_over_seeds([(a, b)])
    low, high = result["ci95"]
    return {"difference": result["difference"], "ci95": result["ci95"], "detected": not low <= 0.0 <= high}


def _training_size(methods: dict, evaluations: list[dict]) -> list[dict]:
    """Methods trained at several sizes: dev and every evaluation's accuracy against the training size."""
    families: dict[tuple, list[str]] = {}
    for label, m in methods.items():
        if m["arch"] == "-":
            continue
        family = (
            m["model"],
            m["task"],
            m["arch"],
            m["method"],
            json.dumps([m["method_args"], m["im"]], sort_keys=True),
        )
        families.setdefault(family, []).append(label)
    out = []
    for family, members in sorted(families.items()):
        if len({methods[m]["size"] for m in members}) < 2:
            continue
        points = []
        for label in members:
            m = methods[label]
            figures = {
                ev["title"]: row["accuracy"] for ev in evaluations for row in ev["rows"] if row["method"] == label
            }
            points.append({"method": label, "size": m["size"], "n_train": m["n_train"], "dev": m["dev_accuracy"]})
            points[-1]["evaluations"] = figures
        points.sort(key=lambda p: (p["n_train"] is None, p["n_train"] or 0))
        out.append({"family": f"{family[2]}+{family[3]}", "model": family[0], "task": family[1], "points": points})
    return out


def _probes(runs: list[Run]) -> list[dict]:
    out = []
    for run in (r for r in runs if r.verb == "probe" and r.probe):
        p = run.probe
        found = {k: p.get(k) for k in ("task", "split", "n_pairs", "perturbation")}
        results = p.get("results", {})
        models = {name: {k: r.get(k) for k in ("distance_mean", "distance_std")} for name, r in results.items()}
        out.append({"run": run.name, **found, "settings": p.get("settings", {}), "models": models})
    return out
