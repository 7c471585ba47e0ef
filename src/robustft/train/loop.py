"""The one training loop. Objectives say what the loss is; the loop owns everything else:
devices, bf16 autocast, accumulation, clipping, schedule, dev evaluation and best-on-dev selection,
checkpoints and exact resume, the run folder and its logs.
"""

from __future__ import annotations

import logging
import math
import random
import shutil
import time
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from robustft import __version__
from robustft.atomic import atomic_write_json
from robustft.config import TrainConfig, config_hash
from robustft.data.batching import collate, encode, epoch_batches
from robustft.data.tasks import get_task, load_examples
from robustft.errors import ConfigError
from robustft.evaluate.clean import accuracy, autocast
from robustft.models.factory import load_classifier
from robustft.train.checkpoint import load_checkpoint, save_checkpoint
from robustft.train.objectives.base import TrainContext, build_objective
from robustft.train.optim import build_optimizer
from robustft.train.run_folder import describe_run, init_logging

log = logging.getLogger("robustft.train")


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def pick_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


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


def train(cfg: TrainConfig, resume: bool = False, overwrite: bool = False, progress: bool = True) -> Path:
    """Train, select the best epoch on dev, and return the run folder (see README: 'A run folder')."""
    cfg.validate()
    run_dir = run_dir_for(cfg)
    checkpoint_dir = run_dir / "checkpoint"
    if run_dir.exists() and any(run_dir.iterdir()) and not resume:
        if not overwrite:
            raise ConfigError(
                f"run folder {run_dir} already exists: pass --resume to continue it, "
                f"--overwrite to start again, or choose another --output_dir"
            )
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    init_logging(run_dir)
    description = describe_run(cfg, run_dir, resume)
    seed_everything(cfg.seed)
    device = pick_device(cfg.device)

    task = get_task(cfg.task)
    train_examples = load_examples(
        cfg.task, cfg.train_split, n=cfg.n_train, seed=cfg.data_seed, per_class=cfg.per_class
    )
    dev_examples = load_examples(cfg.task, cfg.dev_split, n=cfg.n_dev, seed=cfg.data_seed)
    if task.note:
        log.info("data note (%s): %s", task.name, task.note)
    log.info(
        "train %d examples (%s), dev %d (%s), config hash %s",
        len(train_examples),
        cfg.train_split,
        len(dev_examples),
        cfg.dev_split,
        description["hash"][:12],
    )

    model, tokenizer = load_classifier(cfg.model, task.label_names)
    model = apply_arch(model, cfg).to(device)
    objective = build_objective(cfg.method, cfg.method_args)
    objective.setup(
        model, TrainContext(tokenizer=tokenizer, task=task, model_name=cfg.model, run_dir=run_dir, device=device)
    )
    modules = {"model": model, **{f"objective.{k}": m.to(device) for k, m in objective.modules().items()}}

    items = encode(tokenizer, train_examples, cfg.max_length)
    batches_per_epoch = len(
        epoch_batches(items, cfg.batch_size, cfg.seed, 0, cfg.group_by_length, objective.class_balanced_batches)
    )
    steps_per_epoch = math.ceil(batches_per_epoch / cfg.grad_accum)
    optimizer, scheduler = build_optimizer(modules, cfg, steps_per_epoch, objective)
    objective.backward_scale = 1.0 / cfg.grad_accum

    state = {"epoch": 0, "batch": 0, "step": 0, "best": None, "history": [], "train_time_s": 0.0, "examples": 0}
    if resume and checkpoint_dir.exists():
        state = load_checkpoint(checkpoint_dir, modules, optimizer, scheduler)
        log.info("resumed from step %d (epoch %d, batch %d)", state["step"], state["epoch"], state["batch"])
    elif resume:
        log.info("no checkpoint in %s: starting from the beginning", run_dir)

    pad_to = cfg.max_length if cfg.pad_to_max_length else None
    model.train()
    for epoch in range(state["epoch"], cfg.epochs):
        objective.on_epoch_start(epoch)
        order = epoch_batches(
            items, cfg.batch_size, cfg.seed, epoch, cfg.group_by_length, objective.class_balanced_batches
        )
        bar = tqdm(
            total=len(order),
            initial=state["batch"],
            desc=f"epoch {epoch + 1}/{cfg.epochs}",
            disable=not progress,
            leave=False,
        )
        started = time.perf_counter()
        for b in range(state["batch"], len(order)):
            batch = collate([items[i] for i in order[b]], tokenizer.pad_token_id, pad_to)
            batch = {k: v.to(device) if torch.is_tensor(v) else v for k, v in batch.items()}
            with autocast(device, cfg.bf16):
                loss, logs = objective.loss(model, batch)
            (loss / cfg.grad_accum).backward()
            state["examples"] += len(order[b])
            bar.update(1)
            if (b + 1) % cfg.grad_accum and b + 1 < len(order):
                continue
            params = [p for m in modules.values() for p in m.parameters() if p.requires_grad]
            grad_norm = torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            state["step"] += 1
            state["batch"] = b + 1
            bar.set_postfix(loss=f"{loss.item():.4f}")
            if state["step"] % cfg.log_every == 0:
                log.info(
                    "step %d epoch %d loss %.4f grad_norm %.3f lr %.2e %s",
                    state["step"],
                    epoch + 1,
                    loss.item(),
                    grad_norm.item(),
                    scheduler.get_last_lr()[0],
                    " ".join(f"{k} {v:.4f}" for k, v in logs.items()),
                )
            if cfg.checkpoint_every and state["step"] % cfg.checkpoint_every == 0 and b + 1 < len(order):
                state["train_time_s"] += time.perf_counter() - started
                started = time.perf_counter()
                save_checkpoint(checkpoint_dir, modules, optimizer, scheduler, state)
        bar.close()
        state["train_time_s"] += time.perf_counter() - started

        dev = accuracy(
            model, tokenizer, dev_examples, max_length=cfg.max_length, batch_size=cfg.eval_batch_size, bf16=cfg.bf16
        )
        model.train()
        record = {"epoch": epoch + 1, "step": state["step"], **{f"dev_{k}": v for k, v in dev.items()}}
        state["history"].append(record)
        log.info("epoch %d dev accuracy %.4f loss %.4f", epoch + 1, dev["accuracy"], dev["loss"])
        if state["best"] is None or dev["accuracy"] > state["best"]["dev_accuracy"]:
            state["best"] = record
            save_best(model, tokenizer, run_dir / "best")
            log.info("new best on dev: saved %s", run_dir / "best")
        state["epoch"], state["batch"] = epoch + 1, 0
        save_checkpoint(checkpoint_dir, modules, optimizer, scheduler, state)

    metrics = {
        "best": state["best"],
        "history": state["history"],
        "steps": state["step"],
        "train_time_s": round(state["train_time_s"], 3),
        "train_examples_per_s": round(state["examples"] / max(state["train_time_s"], 1e-9), 2),
        "n_train": len(train_examples),
        "n_dev": len(dev_examples),
        "robustft": __version__,
    }
    if cfg.arch != "plain":
        from robustft.models.im import im_stats

        # solver counters (divergences fell back to the explicit step) since this process started
        metrics["im_solver"] = im_stats(model)
        diverged = sum(layer["diverged"] for layer in metrics["im_solver"].values())
        log.info("IM solver: %d diverged solves fell back to the explicit step in this process", diverged)
    atomic_write_json(run_dir / "metrics.json", metrics)
    log.info(
        "done: best dev accuracy %.4f at epoch %d; run folder %s",
        state["best"]["dev_accuracy"],
        state["best"]["epoch"],
        run_dir,
    )
    return run_dir


def save_best(model, tokenizer, folder: Path) -> None:
    """`save_pretrained` into a temporary folder, then swap it in: the best model is never half-written."""
    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp, safe_serialization=True)
    tokenizer.save_pretrained(tmp)
    shutil.rmtree(folder, ignore_errors=True)
    tmp.rename(folder)
