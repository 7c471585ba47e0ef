"""Whether an evaluation ran on the data that chose a model's epoch (its selection set): its accuracy there is
optimistic, so the tables label it and no claim rests on it. Data are compared by file, not by split name: offline,
MNLI's and QQP's "dev" are the same glue_subsets sample as their "subset-dev"."""

from __future__ import annotations

from robustft.errors import ConfigError


def _data_of(task: str, split: str) -> str:
    from robustft.data.tasks import get_task

    try:
        return get_task(task).files.get(split) or f"{task}/{split}"
    except ConfigError:  # a user's task the registry does not know: its split name is all there is
        return f"{task}/{split}"


def chose_epoch(method: dict, task: str | None, split: str | None) -> bool:
    """True when `method` (a summary's methods entry) selected its epoch on `task` `split`."""
    if not task or not split or method.get("task") != task or not method.get("dev_split"):
        return False
    return _data_of(task, split) == _data_of(task, method["dev_split"])
