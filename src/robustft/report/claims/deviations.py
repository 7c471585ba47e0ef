"""Every deviation from the papers' protocols that the runs record or that their configs show.

Recorded: any list of strings under a "deviations" key, at any depth of config.json or metrics.json
(the run layer and the recipes write them). Shown by the configs: the backbone (the papers use BERT-base
or larger), training on a sample or an offline subset, attack samples smaller than the protocols' 1,000
examples, AdvGLUE scored on dev (the leaderboard uses the hidden test set), and the genetic attack's
LM-filter stand-in. As a report plug-in: report.json's "deviations" and their table, after the data's.
"""

from __future__ import annotations

from robustft.errors import ConfigError
from robustft.report.claims.plugin import Claims
from robustft.report.folders import Run
from robustft.report.rendering.tables import Table

PAPER_BACKBONES = ("bert-base-uncased", "bert-large-uncased", "roberta-base", "roberta-large")
PROTOCOL_N = 1000


def _recorded(data, found: list[str]) -> None:
    if isinstance(data, dict):
        for key, value in data.items():
            if key == "deviations" and isinstance(value, list):
                found.extend(str(v) for v in value)
            else:
                _recorded(value, found)
    elif isinstance(data, list):
        for value in data:
            _recorded(value, found)


def _find_key(data, wanted: str):
    if isinstance(data, dict):
        for key, value in data.items():
            if key == wanted:
                return value
            hit = _find_key(value, wanted)
            if hit is not None:
                return hit
    return None


def _task_note(task: str) -> str | None:
    from robustft.data.tasks import get_task

    try:
        return get_task(task).note or None
    except ConfigError:
        return None


def _shown(run: Run) -> list[str]:
    out = []
    train = run.model_config
    if train:
        model = str(train.get("model", ""))
        if model and model not in PAPER_BACKBONES:
            out.append(f"backbone {model} (the papers fine-tune BERT-base or larger)")
        split = train.get("train_split") or "train"
        if split != "train" or train.get("n_train") or train.get("per_class"):
            size = train.get("n_train") or (f"{train['per_class']}/class" if train.get("per_class") else split)
            out.append(f"{train.get('task')} trained on a sample ({size}) of its training data")
        note = _task_note(str(train.get("task", "")))
        if note and "train" in note:
            out.append(f"{train.get('task')}: {note}")
    cfg = run.config
    if run.verb == "attack":
        n = cfg.get("n", cfg.get("num_examples"))
        if n and n < PROTOCOL_N:
            out.append(f"{cfg.get('recipe')} attacked {n} examples (the protocols use {PROTOCOL_N})")
        scorer = _find_key(run.meta, "lm_scorer")
        if cfg.get("recipe") == "genetic" and scorer:
            out.append(
                f"genetic LM filter scored by {scorer} (the papers' LMs are not available offline: Alzantot's "
                "Google 1B, the Learning-to-Write LM of Jia et al. and the RIFT release)"
            )
    if run.verb == "eval" and str(cfg.get("task", "")).startswith("advglue-"):
        out.append("AdvGLUE scored on its public dev set (the leaderboard uses the hidden test set)")
    return out


def collect_deviations(runs: list[Run]) -> list[dict]:
    """[{"text", "runs": [names]}], each deviation once with the runs it concerns, recorded ones first."""
    recorded: dict[str, list[str]] = {}
    shown: dict[str, list[str]] = {}
    for run in runs:
        found: list[str] = []
        _recorded(run.meta, found)
        _recorded(run.metrics, found)
        for text in dict.fromkeys(found):
            recorded.setdefault(text, []).append(run.name)
        for text in dict.fromkeys(_shown(run)):
            if text not in recorded:
                shown.setdefault(text, []).append(run.name)
    return [{"text": t, "runs": r, "source": "recorded by the run"} for t, r in recorded.items()] + [
        {"text": t, "runs": r, "source": "shown by the config"} for t, r in shown.items()
    ]


def deviations_table(summary: dict) -> Table:
    def runs(names):
        return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")

    rows = [[d["text"], d["source"], runs(d["runs"])] for d in summary["deviations"]]
    return Table("Deviations from the papers' protocols", ["deviation", "source", "runs"], rows, section="deviations")


def _add(summary: dict, runs: list[Run], outcomes_of) -> None:
    summary["deviations"] = collect_deviations(runs)


DEVIATIONS = Claims("deviations", _add, lambda summary: [deviations_table(summary)], at_end=True)
