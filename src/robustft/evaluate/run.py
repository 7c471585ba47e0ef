"""`robustft eval` / `robustft.evaluate(cfg)`: per-example predictions and accuracy of a model on a task split,
as a run folder. A model from a training run inherits that run's max_length and precision unless overridden."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import torch

from robustft import runs, runtime
from robustft.config import EvalConfig
from robustft.data.digests import data_digests, model_digests
from robustft.data.tasks import get_task, load_examples
from robustft.evaluate.stats import accuracy_with_interval, majority_baseline
from robustft.models.factory import load_classifier
from robustft.models.predict import check_labels, class_probs

log = logging.getLogger("robustft.evaluate")


def evaluate(cfg: EvalConfig, resume: bool = False, overwrite: bool = False) -> dict:
    """Score the model; returns metrics.json's content (a finished run of the same config is reused)."""
    cfg = dataclasses.replace(cfg).validate()
    task = get_task(cfg.task)
    resolved = runs.resolve(cfg.model)
    cfg, inherited = runs.inherit(cfg, resolved, {"max_length": 128, "precision": "auto"})
    out = Path(cfg.output_dir) if cfg.output_dir else runs.default_output(
        resolved, "eval", cfg.task, cfg.split, f"n{cfg.n}" if cfg.n else None, f"s{cfg.seed}" if cfg.n else None)
    examples = load_examples(cfg.task, cfg.split, n=cfg.n, seed=cfg.seed)
    inputs = {**data_digests(cfg.task, [cfg.split]), **model_digests(resolved.model)}
    extra = {"model_run": runs.model_run_record(resolved), "inherited": inherited}
    with runs.open_run(out, cfg, inputs, resume=resume, overwrite=overwrite, extra=extra) as run:
        if run.finished:
            return run.metrics()
        runtime.set_threads(cfg.threads)
        device = runtime.pick_device(cfg.device)
        model, tokenizer = load_classifier(resolved.model)
        labels_note = check_labels(model, task)
        model.to(device)
        probs = class_probs(model, tokenizer, examples, max_length=cfg.max_length, batch_size=cfg.batch_size,
                            precision=cfg.precision, progress=cfg.progress)
        labels = torch.tensor([e.label for e in examples])
        predictions = probs.argmax(-1)
        correct = (predictions == labels).tolist()
        run.write_records([
            {"index": i, "id": e.id, "label": e.label, "prediction": int(predictions[i]), "correct": correct[i],
             "probs": [round(p, 6) for p in probs[i].tolist()]}
            for i, e in enumerate(examples)])
        loss = torch.nn.functional.nll_loss(torch.log(probs.clamp_min(1e-12)), labels).item()
        metrics = {"model": resolved.model, "task": cfg.task, "split": cfg.split, "n": len(examples),
                   "accuracy": sum(correct) / len(correct),
                   "accuracy_ci95": accuracy_with_interval(correct)["ci95"],
                   "loss": loss, "majority_accuracy": majority_baseline([e.label for e in examples])["accuracy"],
                   "max_length": cfg.max_length, "precision": runtime.resolve_precision(cfg.precision, device),
                   "device": str(device), "labels_note": labels_note}
        log.info("%s/%s: accuracy %.4f on %d examples; run folder %s", cfg.task, cfg.split, metrics["accuracy"],
                 len(examples), out)
        return run.write_metrics(metrics)
