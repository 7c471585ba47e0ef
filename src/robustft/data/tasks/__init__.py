"""The task registry: name -> label names, text fields, splits and how to read each split.

Offline files under the data root come first; when the data root lacks a task's file and the task
has a hub twin, `datasets.load_dataset` is used instead (for users with a network).

`registry` says what a task is; `catalog`, `attack_sets` and `low_resource` register the tasks and their
splits (imported here, in that order, so that `TASKS` is whole once this package is); `loading` reads them.
"""

from robustft.data.tasks.loading import load_examples, split_size
from robustft.data.tasks.registry import (
    NLI2,
    NLI3,
    PARAPHRASE,
    SENTIMENT,
    TASKS,
    TOPIC,
    HubSource,
    Split,
    Task,
    get_task,
    register,
)

# The tasks register on import, in this order: the order `TASKS` (and `robustft tasks`) lists them in.
from robustft.data.tasks import catalog  # isort: skip
from robustft.data.tasks import attack_sets  # isort: skip
from robustft.data.tasks import low_resource  # isort: skip
from robustft.data.tasks.low_resource import KSHOT, KSHOT_SEEDS  # isort: skip

__all__ = [
    "KSHOT",
    "KSHOT_SEEDS",
    "NLI2",
    "NLI3",
    "PARAPHRASE",
    "SENTIMENT",
    "TASKS",
    "TOPIC",
    "HubSource",
    "Split",
    "Task",
    "attack_sets",
    "catalog",
    "get_task",
    "load_examples",
    "low_resource",
    "register",
    "split_size",
]
