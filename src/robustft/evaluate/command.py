"""`robustft eval`: clean accuracy of a saved model (a run folder or a model folder) on any task split."""

from __future__ import annotations

import json
from pathlib import Path

from robustft.atomic import atomic_write_json
from robustft.data.tasks import get_task, load_examples
from robustft.errors import ConfigError
from robustft.evaluate.clean import accuracy
from robustft.models.factory import load_classifier


def resolve_saved_model(model: str) -> tuple[str, dict]:
    """A run folder means its best/ model and its config; anything else is a model reference."""
    path = Path(model)
    if (path / "best" / "config.json").exists():
        run_config = json.loads((path / "config.json").read_text())["config"] if (path / "config.json").exists() else {}
        return str(path / "best"), run_config
    return model, {}


def check_labels(model, task) -> None:
    """A model trained on one label set must not be scored on another (e.g. SST-2 model on MNLI)."""
    id2label = model.config.id2label
    names = [id2label.get(i, id2label.get(str(i))) for i in range(model.config.num_labels)]
    if names != list(task.label_names):
        raise ConfigError(f"the model's labels {names} do not match task '{task.name}' labels {list(task.label_names)}")


def evaluate_saved(
    model: str,
    task_name: str,
    split: str,
    n: int | None = None,
    seed: int = 0,
    max_length: int | None = None,
    batch_size: int = 128,
    bf16: bool = True,
    output: str | None = None,
) -> dict:
    task = get_task(task_name)
    reference, run_config = resolve_saved_model(model)
    classifier, tokenizer = load_classifier(reference)
    check_labels(classifier, task)
    examples = load_examples(task_name, split, n=n, seed=seed)
    max_length = max_length or run_config.get("max_length", 128)
    result = {
        "model": reference,
        "task": task_name,
        "split": split,
        "max_length": max_length,
        **accuracy(
            classifier, tokenizer, examples, max_length=max_length, batch_size=batch_size, bf16=bf16, progress=True
        ),
    }
    if output:
        atomic_write_json(Path(output), result)
    return result
