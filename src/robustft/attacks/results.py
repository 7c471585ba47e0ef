"""The per-example attack record, TextAttack's summary metrics over records, and a CSV export.

Metric definitions follow TextAttack's `AttackSummary` / `AttackSuccessRate` so numbers compare:
- original accuracy = (attacked examples that were not skipped) / all;
- accuracy under attack = failed / all (examples still right after the attack);
- attack success rate = succeeded / (succeeded + failed): already-wrong (skipped) examples left out;
- average perturbed word % = mean over *successful* attacks of modified words / words * 100;
- average number of queries = mean over succeeded + failed (skipped ones are not attacked), in
  TextAttack's unit (every text handed to the goal function, repeats and cache hits included);
  `avg_num_distinct_queries` beside it counts each distinct input once per example;
- average number of words per input = mean over all.
Records with result "error" (a bug or unusable input caught per example) are counted apart and left
out of every metric.
"""

from __future__ import annotations

import csv
import json
from dataclasses import asdict, dataclass, field

SUCCEEDED, FAILED, SKIPPED, ERROR = "succeeded", "failed", "skipped", "error"
RESULTS = (SUCCEEDED, FAILED, SKIPPED, ERROR)


@dataclass
class AttackRecord:
    """One attacked example. `original`/`adversarial` are the perturbed field (for pairs: `perturbed_field`)."""

    index: int
    id: str
    label: int
    result: str  # one of RESULTS
    original: str
    adversarial: str
    perturbed_field: str = "text_a"
    context: str | None = None  # the frozen other text of a pair (e.g. the premise)
    original_pred: int | None = None
    adversarial_pred: int | None = None
    original_probs: list[float] | None = None
    adversarial_probs: list[float] | None = None
    swaps: list[dict] = field(default_factory=list)  # [{index, original, new}] word positions changed
    num_words: int = 0
    queries: int = 0  # TextAttack's unit: every text handed to the goal function
    distinct_queries: int = 0  # distinct inputs (what a cache-perfect caller forwards)
    seconds: float = 0.0
    reason: str = ""  # why an example failed, was skipped or errored (and notes such as truncation)

    @property
    def perturbed_words(self) -> int:
        return len(self.swaps)

    @property
    def perturbed_fraction(self) -> float:
        return self.perturbed_words / self.num_words if self.num_words else 0.0

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: dict) -> AttackRecord:
        return cls(**data)

    @classmethod
    def from_json(cls, line: str) -> AttackRecord:
        return cls.from_dict(json.loads(line))


def _mean(values) -> float | None:
    values = list(values)
    return sum(values) / len(values) if values else None


def _pct(num: int, den: int) -> float | None:
    return 100.0 * num / den if den else None


def summarize(records: list[AttackRecord]) -> dict:
    """TextAttack's summary figures over records (percentages in 0-100; None where undefined)."""
    counted = [r for r in records if r.result != ERROR]
    by = {k: [r for r in counted if r.result == k] for k in (SUCCEEDED, FAILED, SKIPPED)}
    n, ns, nf, nk = len(counted), len(by[SUCCEEDED]), len(by[FAILED]), len(by[SKIPPED])
    attacked = by[SUCCEEDED] + by[FAILED]
    return {
        "num_examples": n,
        "num_succeeded": ns,
        "num_failed": nf,
        "num_skipped": nk,
        "num_errors": len(records) - n,
        "original_accuracy": _pct(n - nk, n),
        "accuracy_under_attack": _pct(nf, n),
        "attack_success_rate": _pct(ns, ns + nf),
        "avg_perturbed_word_pct": _mean(100.0 * r.perturbed_fraction for r in by[SUCCEEDED]),
        "avg_num_words": _mean(r.num_words for r in counted),
        "avg_num_queries": _mean(r.queries for r in attacked),
        "avg_num_distinct_queries": _mean(r.distinct_queries for r in attacked),
        "avg_seconds_per_example": _mean(r.seconds for r in records),
    }


CSV_COLUMNS = (
    "index",
    "id",
    "label",
    "result",
    "original_pred",
    "adversarial_pred",
    "num_words",
    "perturbed_words",
    "queries",
    "distinct_queries",
    "seconds",
    "original",
    "adversarial",
    "swaps",
    "reason",
)


def write_csv(records: list[AttackRecord], path) -> None:
    """One row per record: the fields a spreadsheet user wants, swaps as `i:old->new` pairs."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(CSV_COLUMNS)
        for r in records:
            swaps = "; ".join(f"{s['index']}:{s['original']}->{s['new']}" for s in r.swaps)
            writer.writerow(
                [
                    r.index,
                    r.id,
                    r.label,
                    r.result,
                    r.original_pred,
                    r.adversarial_pred,
                    r.num_words,
                    r.perturbed_words,
                    r.queries,
                    r.distinct_queries,
                    f"{r.seconds:.3f}",
                    r.original,
                    r.adversarial,
                    swaps,
                    r.reason,
                ]
            )


def format_summary(summary: dict, shown: dict[str, str] | None = None) -> str:
    """The summary as aligned lines, TextAttack's names first; `shown`: a key's text instead of its number (the
    command line's accuracies with their n and interval)."""
    names = [
        ("original_accuracy", "Original accuracy (%)"),
        ("accuracy_under_attack", "Accuracy under attack (%)"),
        ("attack_success_rate", "Attack success rate (%)"),
        ("avg_perturbed_word_pct", "Average perturbed word %"),
        ("avg_num_words", "Average num. words per input"),
        ("avg_num_queries", "Average num. queries"),
        ("avg_num_distinct_queries", "Average num. distinct queries"),
        ("num_succeeded", "Successful attacks"),
        ("num_failed", "Failed attacks"),
        ("num_skipped", "Skipped attacks"),
        ("num_errors", "Errors"),
    ]
    lines = []
    for key, label in names:
        v = summary.get(key)
        text = (shown or {}).get(key) or ("-" if v is None else (f"{v:.2f}" if isinstance(v, float) else v))
        lines.append(f"{label:32s} {text}")
    return "\n".join(lines)
