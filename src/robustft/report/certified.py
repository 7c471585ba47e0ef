"""The report's certified accuracy: one entry per eval run made with `--certify` (a SAFER or RanMASK ensemble),
read from its metrics.json `certified` entry (evaluation/certify.py's `certified_summary`).

Each figure is the share of examples whose true label the ensemble provably keeps, with n and the same 95%
interval over examples as every other run's accuracy in the report (`stats.accuracy_from_counts`: Wilson's, from
the count alone, so 0 of n keeps a width). RanMASK has one figure per number of changed words d in RADII. Beside
them, the clean accuracy of the majority-vote classifier the certificate certifies (`vote_accuracy`, the same
interval; None for runs certified before metrics.json carried it)."""

from __future__ import annotations

from robustft.errors import DataFormatError
from robustft.evaluation.stats import accuracy_from_counts
from robustft.report.folders import Run
from robustft.report.method_keys import MethodKey, seed_of
from robustft.report.selection import chose_epoch

SETTING_KEYS = ("defense", "definition", "samples", "alpha", "confidence", "bound")


def is_certified(run: Run) -> bool:
    """An eval run that carries certificates (`robustft eval --certify`)."""
    return run.verb == "eval" and "certified" in (run.metrics or {})


def certified_rows(keyed: list[tuple[Run, MethodKey]], labels: dict[MethodKey, str], methods: dict) -> list[dict]:
    """report.json's `certified`: per certified eval run (by method, data and seed) its settings and figures."""
    rows = [_row(run, labels[key], methods[labels[key]]) for run, key in keyed if is_certified(run)]
    return sorted(rows, key=lambda r: (r["method"], str(r["task"]), str(r["split"]), r["n"] or 0, r["seed"], r["run"]))


def _row(run: Run, label: str, method: dict) -> dict:
    cfg, cert = run.config, run.metrics["certified"]
    missing = [k for k in ("defense", "samples", "confidence") if k not in cert]
    if missing or ("accuracy" not in cert and "accuracy_by_changed_words" not in cert):
        what = ", ".join(missing) or "accuracy"
        raise DataFormatError(run.path / "metrics.json", None, f"its certified entry has no {what}")
    n = cfg.get("n")
    return {
        "method": label,
        "seed": seed_of(run.model_config),
        "run": run.name,
        "task": cfg.get("task"),
        "split": cfg.get("split"),
        "n": n,
        "sample_seed": cfg.get("seed", 0) if n else None,
        "selection": chose_epoch(method, cfg.get("task"), cfg.get("split")),  # its accuracy there is optimistic
        **{k: cert.get(k) for k in SETTING_KEYS},
        "copies": (run.metrics.get("ensemble") or {}).get("copies"),
        "figures": _figures(run, cert),
        "vote_accuracy": _vote_accuracy(run, cert),
        "vote_accuracy_definition": cert.get("vote_accuracy_definition"),
        **({"mean_radius": cert["mean_radius"]} if "mean_radius" in cert else {}),
    }


def _figures(run: Run, cert: dict) -> list[dict]:
    """[{"changed_words": None for SAFER, else d, "accuracy", "n", "correct", "ci95" (Wilson's)}]."""
    found = {None: cert["accuracy"]} if "accuracy" in cert else cert["accuracy_by_changed_words"]
    out = []
    for d, acc in found.items():
        if not isinstance(acc, dict) or "correct" not in acc or "n" not in acc:
            raise DataFormatError(run.path / "metrics.json", None, f"certified accuracy at d={d} has no correct and n")
        out.append({"changed_words": None if d is None else int(d), **accuracy_from_counts(acc["correct"], acc["n"])})
    return sorted(out, key=lambda f: f["changed_words"] or 0)  # metrics.json's keys are strings: "10" < "2"


def _vote_accuracy(run: Run, cert: dict) -> dict | None:
    """{"accuracy", "n", "correct", "ci95" (Wilson's)} of the certified vote classifier; None where not recorded."""
    acc = cert.get("vote_accuracy")
    if acc is None:
        return None
    if not isinstance(acc, dict) or "correct" not in acc or "n" not in acc:
        raise DataFormatError(run.path / "metrics.json", None, "certified vote_accuracy has no correct and n")
    return accuracy_from_counts(acc["correct"], acc["n"])
