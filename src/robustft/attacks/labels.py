"""A model may only be attacked on the task whose labels it was trained to predict.

The label count alone lets an SST-2 model (negative, positive) be attacked on RTE (entailment,
not_entailment): both have two. The names in the model's `config.id2label` decide; a model whose names
are Hugging Face's placeholders (LABEL_0, LABEL_1, ...) says nothing about its task, so only its count
is checked and the caller is told so.
"""

from __future__ import annotations

from robustft.data.tasks import Task
from robustft.errors import ConfigError


def model_label_names(config) -> list[str]:
    id2label = getattr(config, "id2label", None) or {}
    return [str(id2label.get(i, id2label.get(str(i), f"LABEL_{i}"))) for i in range(config.num_labels)]


def check_label_names(config, task: Task) -> str | None:
    """Raise ConfigError when the model's labels are not the task's; return a note when they cannot be told
    (placeholder names), else None. `config` is the model's config (`model.config`)."""
    names = model_label_names(config)
    if len(names) != task.num_labels:
        raise ConfigError(f"the model predicts {len(names)} labels {names}, task '{task.name}' has "
                          f"{task.num_labels} {list(task.label_names)}")
    if all(n == f"LABEL_{i}" for i, n in enumerate(names)):
        return f"the model's labels are unnamed ({', '.join(names)}): assumed to be {list(task.label_names)} in order"
    if [n.lower() for n in names] != [n.lower() for n in task.label_names]:
        raise ConfigError(f"the model's labels {names} do not match task '{task.name}' labels "
                          f"{list(task.label_names)}: it was trained on another task")
    return None
