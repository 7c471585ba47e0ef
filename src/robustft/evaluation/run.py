"""`robustft eval` / `robustft.evaluate(cfg)`: per-example predictions and accuracy of a model on a task split,
as a run folder. A model from a training run inherits that run's task (or data file), max_length and precision
unless overridden (`robustft.data.scored_data`).

Under torchrun (or with `--shard i/n`) each process scores every n-th prediction batch from i (the batches one
process would form, so each probability is computed exactly as one process computes it) into its own shard files;
the last shard to finish merges them (`merge`) into what one process writes."""

from __future__ import annotations

import logging
import math

from robustft import runs, runtime, verbs
from robustft.config import EvalConfig
from robustft.data.batching import encode, eval_batches
from robustft.defenses.ensemble import EnsembleClassifier, as_ensemble, unwrap
from robustft.errors import ConfigError
from robustft.evaluation import certify as certification
from robustft.evaluation.stats import accuracy_text, accuracy_with_interval, majority_baseline
from robustft.models.predict import class_probs
from robustft.runs.result import RunResult

log = logging.getLogger("robustft.evaluate")

# what metrics.json says ran
SETTING_KEYS = ("model", "task", "split", "max_length", "precision", "device", "labels_note")
DEFENSE_KEYS = ("ensemble", "certify")  # only for a model that predicts by an ensemble


def evaluate(cfg: EvalConfig, resume: bool = False, overwrite: bool = False) -> RunResult:
    """Score the model; returns the run folder and metrics.json's content (a finished run of the same config is
    reused)."""
    s = verbs.score_setup(cfg, log, defaults={"max_length": 128, "precision": "auto"}, output=output_name)
    cfg = s.cfg

    def result(metrics: dict) -> RunResult:
        return s.result(metrics, metrics["accuracy"], metrics["accuracy_ci95"])

    model = as_ensemble(s.model, s.tokenizer, s.task)  # a SAFER / RanMASK / DNE model predicts by its ensemble
    check_certify(cfg, model)
    with runs.open_run(s.out, cfg, s.inputs, resume=resume, overwrite=overwrite, extra=s.extra, shard=s.shard) as run:
        if verbs.reuse(run, s.shard, log, f"{cfg.task}/{cfg.split}"):
            return result(run.metrics)
        if run.finished:  # this shard is done; the others may not be
            return result(runs.finish_shard(s.out, merge, cfg) or run.metrics)
        model.to(s.device)
        mine = shard_positions(s.tokenizer, s.examples, cfg, s.shard)
        records = score(model, s.tokenizer, [s.examples[i] for i in mine], mine, cfg)
        run.write_records(records)
        setting = {
            "model": s.resolved.model,
            "task": cfg.task,
            "split": cfg.split,
            "max_length": cfg.max_length,
            "precision": runtime.resolve_precision(cfg.precision, s.device),
            "device": str(s.device),
            "labels_note": s.labels_note,
            **defense_setting(model, cfg),
        }
        metrics = run.write_metrics({**summarize(records, [setting]), **im_fallback(unwrap(model), cfg)})
    if s.shard is not None:
        log.info(
            "%s/%s: shard %d/%d scored %d examples; run folder %s", cfg.task, cfg.split, *s.shard, len(mine), s.out
        )
        return result(runs.finish_shard(s.out, merge, cfg) or metrics)
    log.info("%s/%s: accuracy %s; run folder %s", cfg.task, cfg.split, accuracy_text(metrics), s.out)
    for line in certification.describe(metrics["certified"]) if "certified" in metrics else []:
        log.info("%s/%s: %s", cfg.task, cfg.split, line)
    return result(metrics)


def output_name(cfg: EvalConfig) -> tuple:
    """The default run folder's name after 'eval': task, split, and the sample's size and seed."""
    return cfg.task, cfg.split, f"n{cfg.n}" if cfg.n else None, f"s{cfg.seed}" if cfg.n else None


def score(model, tokenizer, examples: list, positions: list[int], cfg: EvalConfig) -> list[dict]:
    """One record per example (its index in the sample at `positions`): prediction, correctness, probabilities, and
    the certificate when asked."""
    if not examples:
        return []
    probs = class_probs(model, tokenizer, examples, **batching(cfg))
    predictions = probs.argmax(-1).tolist()
    records = [
        {
            "index": i,
            "id": example.id,
            "label": example.label,
            "prediction": predictions[row],
            "correct": predictions[row] == example.label,
            "probs": [round(p, 6) for p in probs[row].tolist()],
        }
        for row, (i, example) in enumerate(zip(positions, examples, strict=True))
    ]
    if cfg.certify:
        add_certificates(records, model, tokenizer, examples, cfg)
    return sorted(records, key=lambda r: r["index"])


def batching(cfg: EvalConfig) -> dict:
    """How the predictions and the certificates' vote counts batch, pad and show progress."""
    return {key: getattr(cfg, key) for key in ("max_length", "batch_size", "precision", "progress")}


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
        model, tokenizer, examples, cfg.certify_samples, cfg.certify_alpha, **batching(cfg)
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
