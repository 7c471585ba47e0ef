"""The one training loop. Objectives say what the loss is; the loop owns everything else:
devices, bf16 autocast, accumulation, clipping, schedule, dev evaluation and best-on-dev selection,
checkpoints and exact resume, the run folder and its logs, and multi-process runs.

Under torchrun or `accelerate launch` (RANK / WORLD_SIZE in the environment) the same loop runs DDP: every rank
takes every n-th example of each global batch (`rank_slice`: the global batch is the single-process batch), DDP
averages the gradients (`no_sync` while accumulating), dev batches are split across ranks and gathered, and rank 0
alone writes the run folder, checkpoints (with every rank's RNG state), logs and trackers.
"""

from __future__ import annotations

import logging
import math
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from robustft import runs, runtime, verbs
from robustft.clock import paused_seconds, working_seconds
from robustft.config import TrainConfig, config_hash
from robustft.data.batching import collate, encode, epoch_batches, rank_slice
from robustft.data.tasks import get_task, load_examples
from robustft.errors import ConfigError, RobustftError
from robustft.models.factory import load_classifier, load_config, load_tokenizer
from robustft.models.im_settings import pinned_gradient
from robustft.models.model_card import KNOWN as CARD_KEYS
from robustft.models.positions import check_max_length
from robustft.runs.result import RunResult
from robustft.training import distributed, tracking
from robustft.training.checkpoint import (
    CheckpointSchedule,
    checkpoint,
    discard_checkpoints,
    has_checkpoint,
    load_checkpoint,
    out_of_patience,
    resumed_precision,
    save_best,
)
from robustft.training.interrupt import report_interrupt
from robustft.training.method import Method, resolve_method
from robustft.training.objectives.base import TrainContext
from robustft.training.optim import build_optimizer
from robustft.version import __version__

log = logging.getLogger("robustft.train")


class TrainingDiverged(RobustftError):
    """The loss or the gradient became non-finite: the run stops before a broken model is saved."""


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def apply_arch(model, cfg: TrainConfig):
    """IM-BERT / EX-BERT connections on top of any encoder (an architecture, not an objective)."""
    if cfg.arch == "plain":
        return model
    from robustft.models.im import convert

    return convert(model, arch=cfg.arch, **cfg.im)


def run_dir_for(cfg: TrainConfig) -> Path:
    if cfg.output_dir:
        return Path(cfg.output_dir)
    return Path("runs") / f"{cfg.task}-{cfg.method}-{cfg.arch}-{config_hash(cfg)[:8]}"


def train(cfg: TrainConfig, resume: bool = False, overwrite: bool = False, progress: bool | None = None) -> RunResult:
    """Train, select the best epoch on dev; returns the run folder (see README: 'A run folder') and its metrics.

    A finished run of the same config in the folder is reused as it is (nothing is trained again).
    """
    verbs.check(cfg)
    method = resolve_method(cfg)
    cfg.im = pinned_gradient(cfg)
    if progress is not None:
        cfg.progress = progress
    task = get_task(cfg.task)
    train_examples, dev_examples = load_data(cfg)
    check_max_length(cfg.max_length, load_config(cfg.model), load_tokenizer(cfg.model), cfg.model)
    inputs = verbs.inputs(cfg.task, [cfg.train_split, cfg.dev_split], cfg.model)
    group = distributed.start(runtime.world(), runtime.pick_device(cfg.device))
    try:
        run = distributed.open_on_main(
            group, run_dir_for(cfg), cfg, inputs, resume=resume, overwrite=overwrite, extra=method.notes()
        )
        if verbs.reuse(run, None, log, "train"):
            return train_result(run.path, run.metrics)
        try:
            return _train(cfg, method, run, task, train_examples, dev_examples, resume, group)
        except KeyboardInterrupt:
            if group.world.main:
                report_interrupt(cfg, run.path)
            raise
        finally:
            run.close()
            runs.detach_log()
    finally:
        group.close()


def load_data(cfg: TrainConfig) -> tuple[list, list]:
    """The training and dev samples; a split without examples, or a sample larger than its split, is refused."""
    train_examples = load_examples(
        cfg.task, cfg.train_split, n=cfg.n_train, seed=cfg.data_seed, per_class=cfg.per_class
    )
    dev_examples = load_examples(cfg.task, cfg.dev_split, n=cfg.n_dev, seed=cfg.data_seed)
    for key, wanted, split in (("n_train", cfg.n_train, cfg.train_split), ("n_dev", cfg.n_dev, cfg.dev_split)):
        available = len(load_examples(cfg.task, split))
        if not available:
            raise ConfigError(f"{key}: {cfg.task}/{split} has no examples")
        if wanted is not None and wanted > available:
            raise ConfigError(f"{key}: asked for {wanted} examples but {cfg.task}/{split} has only {available}")
    return train_examples, dev_examples


def train_result(path: Path, metrics: dict) -> RunResult:
    """The run's result: its best dev accuracy (a fraction) and dev size."""
    best = metrics.get("best") or {}
    return RunResult(Path(path), "train", metrics, best.get("dev_accuracy"), None, metrics.get("n_dev"))


@dataclass
class _Training:
    """What the steps of one training run share: the config and run folder, the model and its objective, the
    optimiser, and `state` (epoch, batch, step, best, history, timing: what a checkpoint saves)."""

    cfg: TrainConfig
    run: runs.Run
    group: distributed.Solo
    device: torch.device
    precision: str
    model: torch.nn.Module
    train_model: torch.nn.Module  # the model DDP-wrapped under a launcher, else the model itself
    tokenizer: Any
    objective: Any
    modules: dict[str, torch.nn.Module]
    extra_params: list  # the objective's own trainable parameters: outside DDP, averaged by hand
    items: list
    optimizer: torch.optim.Optimizer
    scheduler: Any
    scaler: torch.amp.GradScaler
    schedule: CheckpointSchedule
    tracker: Any
    state: dict
    dev_examples: list
    n_train: int

    @property
    def world(self) -> runtime.World:
        return self.group.world

    @property
    def checkpoint_dir(self) -> Path:
        return self.run.path / "checkpoint"


def _train(
    cfg: TrainConfig, method: Method, run: runs.Run, task, train_examples, dev_examples, resume, group
) -> RunResult:
    """Epochs of training passes, each followed by dev evaluation, keeping the best model; then metrics.json."""
    t = _set_up(cfg, method, run, task, train_examples, dev_examples, resume, group)
    for epoch in range(t.state["epoch"], cfg.epochs):
        if out_of_patience(t.state, cfg.patience):  # checked here too, so a resume after the last epoch also stops
            break
        _train_epoch(t, epoch)
        _end_epoch(t, epoch)
    if out_of_patience(t.state, cfg.patience) and t.state["epoch"] < cfg.epochs:
        log.info("stopped after epoch %d: no better dev accuracy for %d epochs", t.state["epoch"], cfg.patience)
    return _finish(t)


def _set_up(
    cfg: TrainConfig, method: Method, run: runs.Run, task, train_examples, dev_examples, resume, group
) -> _Training:
    """The log, seeds, device and precision, then the model, objective and optimiser, resumed from the checkpoint
    when asked. The order is the RNG's: a seeded run must draw the same numbers in the same order."""
    world = group.world
    if world.main:
        runs.attach_log(run.path, "train.log")
    if method.preset_line():  # on the console and in train.log: a preset never changes a run without a word
        log.info("%s", method.preset_line())
    runtime.set_threads(cfg.threads)
    seed_everything(cfg.seed)
    device = runtime.pick_device(cfg.device)
    precision = runtime.resolve_precision(runtime.launcher_precision(cfg.wanted_precision), device)
    _log_data(cfg, run, task, train_examples, dev_examples)
    model, tokenizer = load_classifier(cfg.model, task.label_names)
    model = apply_arch(model, cfg).to(device)
    log.info("device %s, precision %s (config: %s), %d process(es)", device, precision, cfg.precision, world.size)
    objective, modules = _objective_for(cfg, method, task, model, tokenizer, run.path, device)
    items = encode(tokenizer, train_examples, cfg.max_length)
    batches_per_epoch = len(
        epoch_batches(items, cfg.batch_size, cfg.seed, 0, cfg.group_by_length, objective.class_balanced_batches)
    )
    optimizer, scheduler = build_optimizer(modules, cfg, math.ceil(batches_per_epoch / cfg.grad_accum), objective)
    state = _start_or_resume(cfg, run, world, modules, optimizer, scheduler, resume, precision)
    precision = state["precision"]
    train_model = group.wrap(model)  # DDP under a launcher (after the checkpoint load: rank 0's weights win anyway)
    tracker = tracking.open_tracker(cfg, run.path) if world.main else None
    train_model.train()
    return _Training(
        cfg=cfg,
        run=run,
        group=group,
        device=device,
        precision=precision,
        model=model,
        train_model=train_model,
        tokenizer=tokenizer,
        objective=objective,
        modules=modules,
        extra_params=[p for name, m in modules.items() if name != "model" for p in m.parameters() if p.requires_grad],
        items=items,
        optimizer=optimizer,
        scheduler=scheduler,
        # fp16 (CUDA without bf16) needs loss scaling; bf16 and fp32 do not
        scaler=torch.amp.GradScaler(device.type, enabled=precision == "fp16"),
        schedule=CheckpointSchedule(cfg.checkpoint_every, cfg.checkpoint_every_s),
        tracker=tracker,
        state=state,
        dev_examples=dev_examples,
        n_train=len(train_examples),
    )


def _start_or_resume(
    cfg: TrainConfig, run: runs.Run, world: runtime.World, modules, optimizer, scheduler, resume: bool, precision: str
) -> dict:
    """Each rank's seed, then a fresh state, or on resume the checkpoint's (weights, optimiser and RNG restored).
    `state["precision"]` is what the run trains in: a resumed run goes on in the precision it started in."""
    state = {"epoch": 0, "batch": 0, "step": 0, "best": None, "history": [], "train_time_s": 0.0, "examples": 0}
    if world.rank:
        seed_everything(cfg.seed + 100_003 * world.rank)  # every rank its own dropout; rank 0 as one process
    if world.main:
        runs.repair_open_run(run)  # a kill between the best model's two renames
    checkpoint_dir = run.path / "checkpoint"
    if resume and has_checkpoint(checkpoint_dir):
        state = load_checkpoint(checkpoint_dir, modules, optimizer, scheduler, rank=world.rank)
        log.info("resumed from step %d (epoch %d, batch %d)", state["step"], state["epoch"], state["batch"])
        precision = resumed_precision(state, precision)
    elif resume:
        log.info("no checkpoint in %s: starting from the beginning", run.path)
    state["precision"] = precision
    return state


def _objective_for(cfg: TrainConfig, method: Method, task, model, tokenizer, run_dir: Path, device) -> tuple:
    """The method's objective, set up on the model, and every module the optimiser and checkpoints cover: the
    model and the objective's own (RIFT's heads), on the device."""
    objective = method.objective(cfg.method_args)
    objective.setup(
        model, TrainContext(tokenizer=tokenizer, task=task, model_name=cfg.model, run_dir=run_dir, device=device)
    )
    modules = {"model": model, **{f"objective.{k}": m.to(device) for k, m in objective.modules().items()}}
    return objective, modules


def _log_data(cfg: TrainConfig, run: runs.Run, task, train_examples, dev_examples) -> None:
    """What the run trains and evaluates on, and the task's data note, at the top of train.log."""
    if task.note:
        log.info("data note (%s): %s", task.name, task.note)
    log.info(
        "train %d examples (%s), dev %d (%s), config hash %s",
        len(train_examples),
        cfg.train_split,
        len(dev_examples),
        cfg.dev_split,
        run.description["hash"][:12],
    )


def _train_epoch(t: _Training, epoch: int) -> None:
    """One pass over the epoch's batches from `state["batch"]` on: an optimiser step every `grad_accum` batches,
    a checkpoint when the schedule says so; the pass's working time (pauses left out: robustft.clock) goes into
    `state["train_time_s"]`."""
    cfg, state = t.cfg, t.state
    t.objective.on_epoch_start(epoch)
    order = epoch_batches(
        t.items, cfg.batch_size, cfg.seed, epoch, cfg.group_by_length, t.objective.class_balanced_batches
    )
    bar = tqdm(
        total=len(order),
        initial=state["batch"],
        desc=f"epoch {epoch + 1}/{cfg.epochs}",
        disable=not cfg.progress or not t.world.main,
        leave=False,
    )
    started, paused = working_seconds(), paused_seconds()
    for b in range(state["batch"], len(order)):
        boundary = (b + 1) % cfg.grad_accum == 0 or b + 1 == len(order)
        batch_loss, logs = _backward(t, order[b], boundary, f"epoch {epoch + 1} batch {b + 1}")
        state["examples"] += len(order[b])
        bar.update(1)
        if not boundary:
            continue
        grad_norm = _optimizer_step(t, f"epoch {epoch + 1} step {state['step'] + 1}")
        state["step"] += 1
        state["batch"] = b + 1
        bar.set_postfix(loss=f"{batch_loss:.4f}")
        if state["step"] % cfg.log_every == 0:
            _log_step(t, epoch, batch_loss, grad_norm.item(), logs)
        if t.schedule.due(state["step"]) and b + 1 < len(order):
            state["train_time_s"] += working_seconds() - started
            started = working_seconds()
            checkpoint(t.group, t.checkpoint_dir, t.modules, t.optimizer, t.scheduler, state, cfg.checkpoint_keep)
            t.schedule.saved()
    bar.close()
    state["train_time_s"] += working_seconds() - started
    state["paused_s"] = state.get("paused_s", 0.0) + paused_seconds() - paused  # left out of train_time_s


def _backward(t: _Training, global_batch: list[int], boundary: bool, where: str) -> tuple[float, dict]:
    """This rank's share of one global batch: the objective's loss, its gradient accumulated (DDP syncs only on an
    optimiser-step boundary). Returns the global batch's mean loss (the same on every rank) and the objective's
    logs; a non-finite loss stops the run."""
    world, cfg = t.world, t.cfg
    mine, weight = rank_slice(global_batch, world.rank, world.size)
    pad_to = cfg.max_length if cfg.pad_to_max_length else None
    batch = collate([t.items[i] for i in mine], t.tokenizer.pad_token_id, pad_to)
    batch = runtime.to_device(batch, t.device)
    with t.group.no_sync(t.train_model, skip=not boundary):
        with runtime.autocast(t.device, t.precision):
            loss, logs = t.objective.loss(t.train_model, batch)
        batch_loss = t.group.sum(loss.item() * weight / world.size)  # the global batch's mean, on every rank
        if not math.isfinite(batch_loss):
            raise TrainingDiverged(
                f"{where}: the training loss is {batch_loss}; the "
                f"run stops (lower lr, check the data); the best model so far is kept"
            )
        t.scaler.scale((loss if weight == 1 else loss * weight) / cfg.grad_accum).backward()
    return batch_loss, logs


def _optimizer_step(t: _Training, where: str) -> torch.Tensor:
    """Average the objective's own gradients across ranks, clip, step the optimiser and the schedule; returns the
    gradient norm. A non-finite norm stops the run unless fp16 loss scaling will skip the step."""
    t.group.average_grads(t.extra_params)
    params = [p for m in t.modules.values() for p in m.parameters() if p.requires_grad]
    t.scaler.unscale_(t.optimizer)
    # 0 turns clipping off (RIFT's release does not clip); the norm is still measured for the check below
    grad_norm = torch.nn.utils.clip_grad_norm_(params, t.cfg.max_grad_norm or math.inf)
    if not torch.isfinite(grad_norm) and not t.scaler.is_enabled():
        raise TrainingDiverged(
            f"{where}: the gradient norm is {grad_norm.item()}; the run stops before the weights are damaged"
        )
    t.scaler.step(t.optimizer)
    t.scaler.update()
    t.scheduler.step()
    t.optimizer.zero_grad(set_to_none=True)
    return grad_norm


def _log_step(t: _Training, epoch: int, batch_loss: float, grad_norm: float, logs: dict) -> None:
    lr = t.scheduler.get_last_lr()[0]
    log.info(
        "step %d epoch %d loss %.4f grad_norm %.3f lr %.2e %s",
        t.state["step"],
        epoch + 1,
        batch_loss,
        grad_norm,
        lr,
        " ".join(f"{k} {v:.4f}" for k, v in logs.items()),
    )
    tracking.log(t.tracker, {"loss": batch_loss, "grad_norm": grad_norm, "lr": lr, **logs}, t.state["step"], "train")


def _end_epoch(t: _Training, epoch: int) -> None:
    """Dev accuracy into the history, the best model kept, and the end-of-epoch checkpoint."""
    state = t.state
    dev = distributed.dev_accuracy(
        t.group,
        t.model,
        t.tokenizer,
        t.dev_examples,
        max_length=t.cfg.max_length,
        batch_size=t.cfg.eval_batch_size,
        precision=t.precision,
    )
    t.train_model.train()
    record = {"epoch": epoch + 1, "step": state["step"], **{f"dev_{k}": v for k, v in dev.items()}}
    state["history"].append(record)
    log.info("epoch %d dev accuracy %.4f loss %.4f", epoch + 1, dev["accuracy"], dev["loss"])
    tracking.log(t.tracker, {"accuracy": dev["accuracy"], "loss": dev["loss"]}, state["step"], "dev")
    im_fallback_share(t)  # before a model that computes EX-BERT is saved as IM
    if state["best"] is None or dev["accuracy"] > state["best"]["dev_accuracy"]:
        state["best"] = record
        if t.world.main:
            save_best(t.model, t.tokenizer, t.run.path / "best", card=_model_card(t, dev, epoch))
        log.info("new best on dev: saved %s", t.run.path / "best")
    state["epoch"], state["batch"] = epoch + 1, 0
    checkpoint(t.group, t.checkpoint_dir, t.modules, t.optimizer, t.scheduler, state, t.cfg.checkpoint_keep)
    t.schedule.saved()


def im_fallback_share(t: _Training) -> float | None:
    """The share of this process's IM solves that fell back to the explicit step (the mean over ranks), None for a
    plain or EX model; an ImFallbackError above MAX_FALLBACK_SHARE unless the config allows it."""
    if t.cfg.arch != "im":
        return None
    from robustft.models.im import im_stats
    from robustft.models.im_layer import MAX_FALLBACK_SHARE, check_fallback_share, fallback_share

    share = t.group.sum((fallback_share(im_stats(t.model)) or 0.0) / t.world.size)
    check_fallback_share(share, t.cfg.allow_im_fallback, f"training into {t.run.path}")
    if share > MAX_FALLBACK_SHARE:
        log.warning("IM solver: %.1f%% of the solves fell back to the explicit step (allowed)", 100 * share)
    return share


def _model_card(t: _Training, dev: dict, epoch: int) -> dict:
    """What the best model's card says: how it was trained and its dev accuracy."""
    cfg = t.cfg
    own = {"base_model": cfg.model, "n_train": t.n_train, "run": str(t.run.path), "robustft": __version__}
    own["config_hash"] = t.run.description["hash"]
    card = {key: own[key] if key in own else getattr(cfg, key) for key in CARD_KEYS}  # the rest are config keys
    return card | {"dev": {"split": cfg.dev_split, "accuracy": dev["accuracy"], "n": dev["n"], "epoch": epoch + 1}}


def _finish(t: _Training) -> RunResult:
    """metrics.json (rank 0), the tracker closed, every rank past the barrier; returns the run folder."""
    state, cfg, model, world = t.state, t.cfg, t.model, t.world
    metrics = {
        "best": state["best"],
        "history": state["history"],
        "steps": state["step"],
        "epochs_run": state["epoch"],
        "train_time_s": round(state["train_time_s"], 3),
        "train_examples_per_s": round(state["examples"] / max(state["train_time_s"], 1e-9), 2),
        **({"train_paused_s": round(state["paused_s"], 1)} if state.get("paused_s") else {}),
        "n_train": t.n_train,
        "n_dev": len(t.dev_examples),
        "robustft": __version__,
        "device": str(t.device),
        "precision": t.precision,
        "processes": world.size,
    }
    if cfg.arch != "plain":
        from robustft.models.im import im_stats

        # solver counters (divergences fell back to the explicit step) since this process started
        metrics["im_solver"] = im_stats(model)
        metrics["im_fallback_share"] = im_fallback_share(t)
        diverged = sum(layer["diverged"] for layer in metrics["im_solver"].values())
        log.info("IM solver: %d diverged solves fell back to the explicit step in this process", diverged)
    if world.main:
        metrics = t.run.write_metrics(metrics, complete=True)
        if not cfg.keep_checkpoints:  # finished runs are reused, never resumed: best/ is all that stays
            freed = discard_checkpoints(t.checkpoint_dir)
            log.info("removed the checkpoints (%.0f MB; --keep_checkpoints keeps them)", freed / 1e6)
    tracking.finish(t.tracker)
    t.group.barrier()  # every rank returns once metrics.json is written
    log.info(
        "done: best dev accuracy %.4f at epoch %d; run folder %s",
        state["best"]["dev_accuracy"],
        state["best"]["epoch"],
        t.run.path,
    )
    return train_result(t.run.path, metrics)
