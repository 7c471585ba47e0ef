"""Per-run figures with their statistics: accuracy (with n and 95% intervals) and the per-example
correctness the paired tests need. A run summary without its examples file still gives accuracy, n and its
interval (Wilson's depends on the count alone); it cannot be paired."""

from __future__ import annotations

from robustft.attacks.results import ERROR, FAILED, SKIPPED, AttackRecord, summarize
from robustft.evaluation.stats import accuracy_from_counts, accuracy_with_interval, majority_baseline
from robustft.report.folders import Run

ATTACK_EXTRAS = (
    "original_accuracy",
    "attack_success_rate",
    "avg_perturbed_word_pct",
    "avg_num_queries",
    "avg_seconds_per_example",
    "num_errors",
)


def eval_outcomes(run: Run) -> dict[str, bool] | None:
    """{example id: correct} of an eval run, or None without examples.jsonl."""
    if run.examples is None:
        return None
    return {str(e["id"]): bool(e["correct"]) for e in run.examples}


def attack_outcomes(run: Run) -> dict[str, bool] | None:
    """{example id: still right after the attack} (TextAttack: failed attacks), errored examples left out."""
    if run.examples is None:
        return None
    return {str(r["id"]): r["result"] == FAILED for r in run.examples if r["result"] != ERROR}


def right_before_attack(run: Run) -> set[str] | None:
    """Ids of an attack run's examples the model got right before the attack (the attack was not skipped)."""
    if run.examples is None:
        return None
    return {str(r["id"]) for r in run.examples if r["result"] not in (SKIPPED, ERROR)}


def outcomes(run: Run) -> dict[str, bool] | None:
    return attack_outcomes(run) if run.verb == "attack" else eval_outcomes(run)


def labels_of(run: Run) -> list[int] | None:
    if run.examples is None:
        return None
    if run.verb == "attack":
        return [int(r["label"]) for r in run.examples if r["result"] != ERROR]
    return [int(e["label"]) for e in run.examples]


def run_figures(run: Run) -> dict:
    """Accuracy (clean for eval runs, under attack for attack runs) with n and intervals, plus the attack's
    summary figures (percentages as in metrics.json)."""
    found = outcomes(run)
    if found is not None:
        acc = accuracy_with_interval(list(found.values()))
    elif run.verb == "attack":
        acc = accuracy_from_counts(int(run.metrics.get("num_failed", 0)), int(run.metrics.get("num_examples", 0)))
    else:
        n = int(run.metrics.get("n", 0))
        acc = accuracy_from_counts(round(float(run.metrics.get("accuracy", 0.0)) * n), n)
    acc["paired"] = found is not None
    if run.verb == "attack":
        metrics = run.metrics
        if run.examples is not None:
            metrics = summarize([AttackRecord.from_dict(r) for r in run.examples])
        acc.update({k: metrics.get(k) for k in ATTACK_EXTRAS})
        if run.examples is not None:
            clean = [r["result"] != SKIPPED for r in run.examples if r["result"] != ERROR]
            acc["clean"] = accuracy_with_interval(clean) if clean else None
    return acc


def majority_of(runs: list[Run]) -> dict | None:
    """The majority-class baseline of an evaluation's labels (from the first run that has examples)."""
    for run in runs:
        labels = labels_of(run)
        if labels:
            return majority_baseline(labels)
    return None
