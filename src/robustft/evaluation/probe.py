"""`robustft probe` / `robustft.probe(cfg)`: hidden-state distance per layer under word swaps or embedding noise,
for several models (e.g. BERT, EX-BERT, IM-BERT), with the IM solver's residual; a run folder with probe.json,
probe.png, config.json and metrics.json."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import torch

from robustft import runs, runtime, verbs
from robustft.atomic import atomic_write_json
from robustft.config import ProbeConfig
from robustft.data.digests import model_digests
from robustft.data.tasks import get_task, load_examples
from robustft.errors import ConfigError
from robustft.models.factory import load_classifier
from robustft.models.im import convert, settings_of
from robustft.models.probe import noise_pairs, plot, swap_pairs
from robustft.models.probe import probe as measure
from robustft.runs.result import RunResult

log = logging.getLogger("robustft.probe")

VARIANT_NAMES = {"plain": "BERT", "ex": "EX-BERT", "im": "IM-BERT"}


def model_specs(cfg: ProbeConfig) -> dict[str, tuple[str, str | None]]:
    """name -> (model reference, variant or None) for every model the probe measures."""
    specs = {}
    for spec in cfg.models:
        name, _, path = str(spec).rpartition("=")
        specs[name or Path(path.rstrip("/")).name] = (runs.resolve(path).model, None)
    if cfg.base:
        for variant in cfg.variants.split(","):
            if variant not in VARIANT_NAMES:
                raise ConfigError(f"variants: unknown variant '{variant}'; use plain, ex or im")
            specs[VARIANT_NAMES[variant]] = (cfg.base, variant)
    if not specs:
        raise ConfigError("models: give --models PATH (repeatable) or --base MODEL --variants plain,ex,im")
    return specs


def load(reference: str, variant: str | None, cfg: ProbeConfig):
    labels = get_task(cfg.task).label_names if variant else None
    model, tokenizer = load_classifier(reference, labels)
    if variant not in (None, "plain"):
        convert(model, arch=variant, **cfg.im)
    return model, tokenizer


def probe(cfg: ProbeConfig, resume: bool = False, overwrite: bool = False) -> RunResult:
    """Measure every model on the same perturbed pairs; returns the run folder and metrics.json's content."""
    cfg = verbs.check(dataclasses.replace(cfg, models=list(cfg.models), im=dict(cfg.im)))
    specs = model_specs(cfg)
    task = get_task(cfg.task)
    texts = [e.field(task.perturb_field) for e in load_examples(cfg.task, cfg.split, n=cfg.n, seed=cfg.seed)]
    pairs = swap_pairs(texts, cfg.swaps, cfg.seed) if cfg.perturb == "swap" else noise_pairs(texts)
    inputs = verbs.inputs(cfg.task, [cfg.split])
    for name, (reference, _) in specs.items():
        inputs.update({f"{name}/{k}": v for k, v in model_digests(reference).items()})
    with runs.open_run(Path(cfg.output_dir), cfg, inputs, resume=resume, overwrite=overwrite) as run:
        if not verbs.reuse(run, None, log, "probe"):
            measure_all(cfg, specs, pairs, run)
        return RunResult(run.path, cfg.verb, run.metrics)


def measure_all(cfg: ProbeConfig, specs: dict, pairs: list, run: runs.Run) -> None:
    """Every model's distances on the pairs, into probe.json, probe.png and metrics.json."""
    runtime.set_threads(cfg.threads)
    device = runtime.pick_device(cfg.device)
    torch.manual_seed(cfg.seed)
    noise = cfg.noise if cfg.perturb == "noise" else 0.0
    results, settings = {}, {}
    for name, (reference, variant) in specs.items():
        model, tokenizer = load(reference, variant, cfg)
        model.to(device)
        results[name] = measure(
            model, tokenizer, pairs, noise_std=noise, seed=cfg.seed, max_length=cfg.max_length, precision=cfg.precision
        )
        im = settings_of(model)
        settings[name] = im.to_dict() if im else None
        log.info(
            "%-12s last-layer distance %.4f  per layer %s",
            name,
            results[name]["distance_mean"][-1],
            " ".join(f"{d:.3f}" for d in results[name]["distance_mean"]),
        )
    what = f"{cfg.swaps} counter-fitted swap(s)" if cfg.perturb == "swap" else f"embedding noise std {noise}"
    record = {
        "task": cfg.task,
        "split": cfg.split,
        "n_pairs": len(pairs),
        "perturbation": what,
        "seed": cfg.seed,
        "settings": settings,
        "results": results,
    }
    atomic_write_json(run.path / "probe.json", record)
    plot(results, run.path / "probe.png", title=f"{cfg.task} {cfg.split}: {len(pairs)} pairs, {what}")
    last = {k: v["distance_mean"][-1] for k, v in results.items()}
    run.write_metrics({"n_pairs": len(pairs), "perturbation": what, "last_layer_distance": last})
