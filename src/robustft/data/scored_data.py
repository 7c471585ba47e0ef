"""What `eval` and `attack` score a trained run's model on when the command does not say (issue 67).

A run folder's model is scored on the task it was trained on: without --task, --data or --dataset the run's task
(or its own data file or dataset, with the columns and labels it used) is taken, and one line says so. Before, a
model trained on MR or on a user's file was scored on SST-2 without a word.

For a `--data` file the split defaults to the rows the model did not train on: the run's own file (the same content
hash, so the same task name) gives its dev split, the 10% held out of training; any other file gives every row
(split test). One line names the rows; asking for the train or test split of the training file (rows the model was
trained on) is a warning naming how many.
"""

from __future__ import annotations

import copy
from pathlib import Path

from robustft.data.tasks import load_examples
from robustft.data.user_tasks import resolve_data

# the keys that say what data a run trained on besides `task` (the data layer makes the task from them)
DATA_KEYS = ("data", "dataset", "dataset_config", "data_columns", "data_labels")
TRAINED_ROWS = ("train", "test")  # of a --data file: a split holding rows the run trained on (test is every row)


def inherit_task(cfg, resolved, chosen: set[str]) -> str | None:
    """Give `cfg` the run's task or data unless the user chose one; the line that says what was taken, or None."""
    train = resolved.train_config or {}
    if not train or chosen & {"task", "data", "dataset"}:
        return None
    if train.get("data") or train.get("dataset"):
        for key in DATA_KEYS:
            setattr(cfg, key, copy.deepcopy(train.get(key, getattr(cfg, key))))
        if train.get("data"):
            cfg.data = data_path(train["data"], resolved.train_inputs or {})
        what = f"data file {cfg.data}" if cfg.data else f"dataset {cfg.dataset}"
    elif train.get("task"):
        cfg.task = train["task"]
        what = f"task {cfg.task}"
    else:
        return None
    return f"{cfg.verb}: the model was trained on {what}: scoring it there (--task, --data or --dataset: another)"


def data_path(given: str, inputs: dict) -> str:
    """The run's data file as an absolute path where its inputs record one (a relative path given at training time
    means nothing from another working directory)."""
    recorded = [key.removeprefix("data:") for key in inputs if key.startswith("data:")]
    return recorded[0] if len(recorded) == 1 and Path(recorded[0]).is_file() else given


def default_split(cfg, resolved, chosen: set[str]) -> tuple[str, str] | None:
    """For a --data file: set `cfg.split` when the user gave none (the rows the model did not train on); returns
    (logging level, line) naming the rows scored, a warning for rows the model trained on, or None."""
    if not cfg.data:
        return None
    trained_on_file = (resolved.train_config or {}).get("task") == cfg.task
    rows = {split: len(load_examples(cfg.task, split)) for split in ("train", "dev", "test")}
    if "split" not in chosen or cfg.split is None:
        cfg.split = "dev" if trained_on_file else "test"
        if trained_on_file:
            return "info", (
                f"{cfg.verb}: {cfg.data} is the file the model was trained on: scoring its dev split, the "
                f"{rows['dev']} of {rows['test']} rows held out of training (--split test: every row)"
            )
        if f"data:{Path(cfg.data).resolve()}" in (resolved.train_inputs or {}):  # the training file, edited since
            return "warning", (
                f"{cfg.verb}: {cfg.data} changed since the model was trained on it: scoring all its {rows['test']} "
                f"rows (split test), which may include rows it was trained on"
            )
        why = "not the file the model was trained on" if resolved.train_config else "no training run is known"
        return "info", f"{cfg.verb}: {cfg.data}: scoring all its {rows['test']} rows (split test; {why})"
    if trained_on_file and cfg.split in TRAINED_ROWS:
        return "warning", (
            f"{cfg.verb}: split {cfg.split} of {cfg.data} holds the {rows['train']} rows the model was trained on; "
            f"--split dev scores only the {rows['dev']} held-out rows"
        )
    return None


def settle(cfg, resolved, chosen: set[str], log) -> dict:
    """`inherit_task` then `default_split` on a validated config, their lines logged; returns what config.json
    records among the run's `inherited` keys."""
    record = {}
    said = inherit_task(cfg, resolved, chosen)
    if said:
        resolve_data(cfg)  # an inherited file or dataset made into its task
        log.info("%s", said)
        record["task"] = {"value": cfg.task, "from": "training run"}
    found = default_split(cfg, resolved, chosen)
    if found:
        level, line = found
        getattr(log, level)("%s", line)
        record["split"] = {"value": cfg.split, "note": line}
    return record
