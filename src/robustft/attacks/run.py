"""`robustft attack` / `robustft.attack(cfg)`: attack a classifier with a recipe on a seeded sample of a task split,
streaming per-example records into a run folder. A model from a training run inherits that run's task (or data
file), max_length and precision unless overridden; what was inherited is recorded in config.json.

Under torchrun (or with `--shard i/n`) each process attacks every n-th example from i into its own shard files of
the same run folder; the last shard to finish merges them (`merge`), and the merged folder is what one process
writes."""

from __future__ import annotations

import logging
from pathlib import Path

from robustft import resources, runs, runtime
from robustft.attacks.example_loop import merged_csv, merged_summary, run_attack
from robustft.attacks.recipes import build_attack, hashed_config, protocol_keeps
from robustft.attacks.victim import Victim
from robustft.config import AttackConfig, config_hash, copy_config, explicit_keys
from robustft.data.digests import data_digests, model_digests
from robustft.data.scored_data import settle
from robustft.data.tasks import get_task, load_examples
from robustft.errors import RobustftError
from robustft.models.factory import load_classifier
from robustft.models.positions import check_max_length
from robustft.models.predict import check_labels

log = logging.getLogger("robustft.attacks")

NEEDS_MLM = ("bert-attack", "genetic")
ENGINE_KEYS = ("query_budget", "query_budget_unit", "pair_words", "time_limit_s", "recheck_full_precision")


class AllExamplesErrored(RobustftError):
    """Every attacked example ended as an error record: the run produced no number."""


def attack(cfg: AttackConfig, resume: bool = False, overwrite: bool = False) -> dict:
    """Run the attack; returns metrics.json's content (a finished run of the same config is reused)."""
    chosen = explicit_keys(cfg)
    cfg = copy_config(cfg, recipe_args=dict(cfg.recipe_args)).validate()
    resolved = runs.resolve(cfg.model)
    scored = settle(cfg, resolved, chosen, log)  # a run's own task or file, and a file's rows, unless chosen
    task = get_task(cfg.task)
    cfg.split = cfg.split or ("test" if "test" in task.splits else "dev")
    cfg, inherited = runs.inherit(cfg, resolved, {"max_length": None, "precision": "auto"})
    inherited.update(scored)
    out = (
        Path(cfg.output_dir)
        if cfg.output_dir
        else runs.default_output(
            resolved, "attack", cfg.recipe, cfg.protocol, cfg.task, cfg.split, f"n{cfg.n}", f"s{cfg.seed}"
        )
    )
    examples = load_examples(
        cfg.task, cfg.split, n=cfg.n, seed=cfg.seed, keep=lambda e: protocol_keeps(cfg.protocol, e)
    )
    runtime.set_threads(cfg.threads)
    device = runtime.pick_device(cfg.device)
    model, tokenizer = load_classifier(resolved.model)
    check_max_length(cfg.max_length, model.config, tokenizer, cfg.model)
    labels_note = check_labels(model, task)
    model.to(device).eval()
    victim = Victim(
        model,
        tokenizer,
        task,
        max_length=cfg.max_length,
        batch_size=cfg.batch_size,
        precision=cfg.precision,
        compile_model=cfg.compile_victim,
    )
    settings = dict(cfg.recipe_args)
    for key in ENGINE_KEYS:  # first-class keys of the config, passed to the recipe when set
        if getattr(cfg, key) is not None:
            settings[key] = getattr(cfg, key)
    mlm = None
    if cfg.recipe in NEEDS_MLM and settings.get("lm_scorer", 1) is not None:
        from robustft.models.mlm import load_masked_lm

        mlm = load_masked_lm(cfg.mlm)
        mlm[0].to(device)
    built = build_attack(cfg.recipe, victim, cfg.protocol, settings, mlm=mlm)
    inputs = {
        **data_digests(cfg.task, [cfg.split]),
        **model_digests(resolved.model),
        **{f"resource/{name}": resources.file_sha256(path) for name, path in built.resources().items()},
        "attack/config": config_hash(hashed_config(built.config())),
        "examples": config_hash([e.id for e in examples]),
    }
    extra = {
        "model_run": runs.model_run_record(resolved),
        "inherited": inherited,
        "attack": built.config(),
        "recipe": cfg.recipe,
        "examples": [e.id for e in examples],
        "mlm": getattr(mlm[0], "mlm_source", cfg.mlm) if mlm else None,
        "labels_note": labels_note,
        "precision_used": runtime.resolve_precision(cfg.precision, device),
    }
    shard = runs.shard_of(cfg)
    with runs.open_run(out, cfg, inputs, resume=resume, overwrite=overwrite, extra=extra, shard=shard) as run:
        if run.finished and (shard is None or run.merged):
            log.info("finished earlier with these settings (reused); run folder: %s", out)
            return run.metrics
        if run.finished:  # this shard is done; the others may not be
            records, summary = [], run.metrics
        else:
            runs.attach_log(run.path, run.file("attack.log").name)
            try:
                records, summary = run_attack(
                    built,
                    examples,
                    run,
                    seed=cfg.seed,
                    progress=cfg.progress,
                    first=cfg.first,
                    concurrent=cfg.concurrent_examples,
                )
            finally:
                runs.detach_log()
    part = f" (shard {shard[0]}/{shard[1]})" if shard else ""
    log.info("attack finished%s; run folder: %s", part, out)  # the summary is the caller's to show (the CLI prints it)
    if records and summary["num_errors"] == len(records):
        raise AllExamplesErrored(
            f"all {len(records)} examples ended in errors (see {out}/attack.log); no number was produced"
        )
    if shard is not None and summary["complete"]:
        return runs.finish_shard(out, merge, cfg) or summary
    return summary


def merge(path, strict: bool = False) -> dict | None:
    """Merge the shards of the attack run in `path` once all are finished (None until then)."""
    return runs.merge_shards(path, merged_summary, merged_csv, strict=strict)
