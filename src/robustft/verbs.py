"""The skeleton train, evaluate, attack and probe share, written once: what a verb settles before it computes
(the model reference resolved, a trained run's task, data and settings inherited, the output folder, the examples,
the inputs' digests, threads and device, the model loaded and checked) and how it opens its run folder (reusing a
finished run, or a finished shard) and logs into it.

`check` runs first in every verb, before any data or model loads; `score_setup` is the part of eval and attack
that is the same; `inputs` and `reuse` every verb uses.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from robustft import runs, runtime
from robustft.config import copy_config, explicit_keys
from robustft.data.digests import data_digests, model_digests
from robustft.data.scored_data import settle
from robustft.data.tasks import Task, get_task, load_examples
from robustft.data.user_tasks import resolve_data
from robustft.models.factory import load_classifier
from robustft.models.im_settings import check_im
from robustft.models.positions import check_max_length
from robustft.models.predict import check_labels
from robustft.runs.result import RunResult


def check(cfg):
    """`cfg` validated (kinds and ranges), its IM settings checked against its architecture, and a user's data file
    or dataset made into its task (`cfg.task` names it). Explicit, in the verb: validation itself stays pure."""
    cfg.validate()
    if hasattr(cfg, "im"):
        check_im(cfg)
    resolve_data(cfg)
    return cfg


def inputs(task: str, splits: list[str], *models: str) -> dict[str, str]:
    """What a run records it read (sha256 of every data and model file), in its hash."""
    out = data_digests(task, splits)
    for model in models:
        out.update(model_digests(model))
    return out


def reuse(run: runs.Run, shard: tuple[int, int] | None, log: logging.Logger, what: str) -> bool:
    """Whether the opened run is a finished one of the same settings (a sharded run: merged too), said in one line."""
    if run.finished and (shard is None or run.merged):
        log.info("%s: finished earlier with these settings (reused); run folder %s", what, run.path)
        return True
    return False


@contextlib.contextmanager
def logging_into(run: runs.Run, name: str):
    """robustft's log records go to the run folder's `name` too while the verb works."""
    runs.attach_log(run.path, run.file(name).name)
    try:
        yield
    finally:
        runs.detach_log()


@dataclass
class Scoring:
    """What eval and attack settle before they score a model on examples."""

    cfg: Any
    resolved: runs.Resolved
    task: Task
    out: Path
    examples: list
    inputs: dict[str, str]
    extra: dict[str, Any]
    shard: tuple[int, int] | None
    device: Any
    model: Any
    tokenizer: Any
    labels_note: str | None

    def result(self, metrics: dict, accuracy: float | None, ci95=None) -> RunResult:
        n = metrics.get("n", metrics.get("num_examples"))
        return RunResult(self.out, self.cfg.verb, metrics, accuracy, tuple(ci95) if ci95 else None, n)


def score_setup(
    cfg,
    log: logging.Logger,
    *,
    defaults: dict[str, Any],
    output: Callable[[Any], tuple],
    default_split: Callable[[Task], str] | None = None,
    keep: Callable | None = None,
    **copied,
) -> Scoring:
    """A validated copy of `cfg` (the caller's is left as it was) with a trained run's task or data (`settle`) and
    settings (`defaults`: key -> value without a run) inherited, its output folder (`output(cfg)`: the name's
    parts), examples, inputs and shard; then the model, loaded and checked against the task before any folder is
    written."""
    chosen = explicit_keys(cfg)
    cfg = check(copy_config(cfg, **copied))
    resolved = runs.resolve(cfg.model)
    scored = settle(cfg, resolved, chosen, log)  # a run's own task or file, and a file's rows, unless chosen
    task = get_task(cfg.task)
    if default_split is not None and cfg.split is None:
        cfg.split = default_split(task)
    cfg, inherited = runs.inherit(cfg, resolved, defaults)
    inherited.update(scored)
    out = Path(cfg.output_dir) if cfg.output_dir else runs.default_output(resolved, cfg.verb, *output(cfg))
    examples = load_examples(cfg.task, cfg.split, n=cfg.n, seed=cfg.seed, keep=keep)
    runtime.set_threads(cfg.threads)
    device = runtime.pick_device(cfg.device)
    model, tokenizer = load_classifier(resolved.model)  # a bad model is refused before any folder is written
    check_max_length(cfg.max_length, model.config, tokenizer, cfg.model)
    return Scoring(
        cfg=cfg,
        resolved=resolved,
        task=task,
        out=out,
        examples=examples,
        inputs=inputs(cfg.task, [cfg.split], resolved.model),
        extra={"model_run": runs.model_run_record(resolved), "inherited": inherited},
        shard=runs.shard_of(cfg),
        device=device,
        model=model,
        tokenizer=tokenizer,
        labels_note=check_labels(model, task),
    )
