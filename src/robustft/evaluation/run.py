"""`robustft eval` / `robustft.evaluate(cfg)`: per-example predictions and accuracy of a model on a task split,
as a run folder. A model from a training run inherits that run's task (or data file), max_length and precision
unless overridden (`robustft.data.scored_data`).

Under torchrun (or with `--shard i/n`) each process scores every n-th prediction batch from i (the batches one
process would form, so each probability is computed exactly as one process computes it) into its own shard files;
the last shard to finish merges them (`merge`) into what one process writes."""

from __future__ import annotations

import logging
import math
from pathlib import Path

from robustft import runs, runtime
from robustft.config import EvalConfig, copy_config, explicit_keys
from robustft.data.batching import encode, eval_batches
from robustft.data.digests import data_digests, model_digests
from robustft.data.scored_data import settle
from robustft.data.tasks import get_task, load_examples
from robustft.defenses.ensemble import EnsembleClassifier, as_ensemble, unwrap
from robustft.errors import ConfigError
from robustft.evaluation import certify as certification
from robustft.evaluation.stats import accuracy_with_interval, majority_baseline
from robustft.models.factory import load_classifier
from robustft.models.positions import check_max_length
from robustft.models.predict import check_labels, class_probs

log = logging.getLogger("robustft.evaluate")

# what metrics.json says ran
SETTING_KEYS = ("model", "task", "split", "max_length", "precision", "device", "labels_note")
DEFENSE_KEYS = ("ensemble", "certify")  # only for a model that predicts by an ensemble


def evaluate(cfg: EvalConfig, resume: bool = False, overwrite: bool = False) -> dict:
    """Score the model; returns metrics.json's content (a finished run of the same config is reused)."""
    chosen = explicit_keys(cfg)
    cfg = copy_config(cfg).validate()
    resolved = runs.resolve(cfg.model)
    scored = settle(cfg, resolved, chosen, log)  # a run's own task or file, and a file's rows, unless chosen
    task = get_task(cfg.task)
    cfg, inherited = runs.inherit(cfg, resolved, {"max_length": 128, "precision": "auto"})
    inherited.update(scored)
    out = (
        Path(cfg.output_dir)
        if cfg.output_dir
        else runs.default_output(
            resolved, "eval", cfg.task, cfg.split, f"n{cfg.n}" if cfg.n else None, f"s{cfg.seed}" if cfg.n else None
        )
    )
    examples = load_examples(cfg.task, cfg.split, n=cfg.n, seed=cfg.seed)
    inputs = {**data_digests(cfg.task, [cfg.split]), **model_digests(resolved.model)}
    extra = {"model_run": runs.model_run_record(resolved), "inherited": inherited}
    shard = runs.shard_of(cfg)
    runtime.set_threads(cfg.threads)
    device = runtime.pick_device(cfg.device)
    model, tokenizer = load_classifier(resolved.model)  # a bad model is refused before any folder is written
    check_max_length(cfg.max_length, model.config, tokenizer, cfg.model)
    labels_note = check_labels(model, task)
    model = as_ensemble(model, tokenizer, task)  # a SAFER / RanMASK / DNE model predicts by its ensemble
    check_certify(cfg, model)
    with runs.open_run(out, cfg, inputs, resume=resume, overwrite=overwrite, extra=extra, shard=shard) as run:
        if run.finished and (shard is None or run.merged):
            log.info("%s/%s: finished earlier with these settings (reused); run folder %s", cfg.task, cfg.split, out)
            return run.metrics
        if run.finished:  # this shard is done; the others may not be
            return runs.finish_shard(out, merge, cfg) or run.metrics
        model.to(device)
        mine = shard_positions(tokenizer, examples, cfg, shard)
        probs = (
            class_probs(
                model,
                tokenizer,
                [examples[i] for i in mine],
                max_length=cfg.max_length,
                batch_size=cfg.batch_size,
                precision=cfg.precision,
                progress=cfg.progress,
            )
            if mine
            else []
        )
        predictions = probs.argmax(-1).tolist() if mine else []
        records = [
            {
                "index": i,
                "id": examples[i].id,
                "label": examples[i].label,
                "prediction": predictions[row],
                "correct": predictions[row] == examples[i].label,
                "probs": [round(p, 6) for p in probs[row].tolist()],
            }
            for row, i in enumerate(mine)
        ]
        if cfg.certify and mine:
            add_certificates(records, model, tokenizer, [examples[i] for i in mine], cfg)
        run.write_records(sorted(records, key=lambda r: r["index"]))
        setting = {
            "model": resolved.model,
            "task": cfg.task,
            "split": cfg.split,
            "max_length": cfg.max_length,
            "precision": runtime.resolve_precision(cfg.precision, device),
            "device": str(device),
            "labels_note": labels_note,
            **defense_setting(model, cfg),
        }
        metrics = run.write_metrics({**summarize(records, [setting]), **im_fallback(unwrap(model), cfg)})
    if shard is not None:
        log.info("%s/%s: shard %d/%d scored %d examples; run folder %s", cfg.task, cfg.split, *shard, len(mine), out)
        return runs.finish_shard(out, merge, cfg) or metrics
    log.info(
        "%s/%s: accuracy %.4f on %d examples; run folder %s",
        cfg.task,
        cfg.split,
        metrics["accuracy"],
        len(examples),
        out,
    )
    for line in certification.describe(metrics["certified"]) if "certified" in metrics else []:
        log.info("%s/%s: %s", cfg.task, cfg.split, line)
    return metrics


def check_certify(cfg: EvalConfig, model) -> None:
    """--certify needs a model that predicts by a SAFER or RanMASK ensemble (the defenses with a certificate)."""
    kind = model.settings.kind if isinstance(model, EnsembleClassifier) else None
    if cfg.certify and kind not in certification.DEFINITIONS:
        what = f"a {kind} ensemble" if kind else "no ensemble"
        raise ConfigError(
            f"certify: {cfg.model} predicts by {what}; certified accuracy is defined for models trained with "
            f"--method safer or ranmask"
        )


def defense_setting(model, cfg: EvalConfig) -> dict:
    """What metrics.json records of the ensemble that predicted, and of the certificate when one was asked for."""
    if not isinstance(model, EnsembleClassifier):
        return {}
    out = {"ensemble": model.settings.to_config()}
    if cfg.certify:
        out["certify"] = {
            "defense": model.settings.kind,
            "samples": cfg.certify_samples,
            "alpha": cfg.certify_alpha,
            "confidence": 1.0 - cfg.certify_alpha,
            "seed": model.settings.seed + 1,
            "bound": "one-sided Clopper-Pearson lower bound of the true label's vote share",
        }
    return out


def add_certificates(records: list[dict], model, tokenizer, examples, cfg: EvalConfig) -> None:
    """Each record's certificate (`certify` key), from `cfg.certify_samples` fresh noisy copies of its example."""
    certs = certification.certify_records(
        model,
        tokenizer,
        examples,
        cfg.certify_samples,
        cfg.certify_alpha,
        max_length=cfg.max_length,
        batch_size=cfg.batch_size,
        precision=cfg.precision,
        progress=cfg.progress,
    )
    for record, cert in zip(records, certs, strict=True):
        record["certify"] = cert


def im_fallback(model, cfg: EvalConfig) -> dict:
    """{"im_fallback_share": share of the IM solves that fell back to the explicit step} for a model with solving IM
    layers ({} for others); an ImFallbackError above MAX_FALLBACK_SHARE unless cfg.allow_im_fallback."""
    from robustft.models.im import im_stats
    from robustft.models.im_layer import check_fallback_share, fallback_share

    share = fallback_share(im_stats(model))
    if share is None:
        return {}
    check_fallback_share(share, cfg.allow_im_fallback, f"evaluating {cfg.model} on {cfg.task}/{cfg.split}")
    return {"im_fallback_share": share}


def shard_positions(tokenizer, examples, cfg: EvalConfig, shard: tuple[int, int] | None) -> list[int]:
    """The examples of shard (i, n): the whole prediction batches i, i+n, ... of one process's batching, so a
    shard pads and computes each example exactly as one process does."""
    if shard is None:
        return list(range(len(examples)))
    batches = eval_batches(encode(tokenizer, examples, cfg.max_length), cfg.batch_size)
    return sorted(i for b in runs.shard_indices(len(batches), shard) for i in batches[b])


def summarize(records: list[dict], settings: list[dict]) -> dict:
    """metrics.json from the per-example records (one process and a merge of shards compute the same numbers)."""
    records = sorted(records, key=lambda r: r["index"])
    correct = [bool(r["correct"]) for r in records]
    loss = -sum(math.log(max(r["probs"][r["label"]], 1e-12)) for r in records) / max(len(records), 1)
    setting = {k: settings[0][k] for k in SETTING_KEYS} | {k: settings[0][k] for k in DEFENSE_KEYS if k in settings[0]}
    if "certify" in setting:
        setting["certified"] = certification.certified_summary(records, setting.pop("certify"))
    return {
        **setting,
        "n": len(records),
        "accuracy": sum(correct) / max(len(correct), 1),
        "accuracy_ci95": accuracy_with_interval(correct)["ci95"],
        "loss": loss,
        "majority_accuracy": majority_baseline([r["label"] for r in records])["accuracy"],
    }


def merge(path, strict: bool = False) -> dict | None:
    """Merge the shards of the evaluation run in `path` once all are finished (None until then)."""
    return runs.merge_shards(path, summarize, strict=strict)
