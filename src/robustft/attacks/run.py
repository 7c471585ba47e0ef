"""`robustft attack` / `robustft.attack(cfg)`: attack a classifier with a recipe on a seeded sample of a task split,
streaming per-example records into a run folder. A model from a training run inherits that run's task (or data
file), max_length and precision unless overridden; what was inherited is recorded in config.json.

Under torchrun (or with `--shard i/n`) each process attacks every n-th example from i into its own shard files of
the same run folder; the last shard to finish merges them (`merge`), and the merged folder is what one process
writes."""

from __future__ import annotations

import logging

from robustft import resources, runs, runtime, verbs
from robustft.attacks.example_loop import merged_csv, merged_summary, run_attack
from robustft.attacks.recipes import build_attack, hashed_config, protocol_keeps, recipe_config
from robustft.attacks.victim import Victim
from robustft.config import AttackConfig, config_hash
from robustft.errors import RobustftError
from robustft.runs.result import RunResult

log = logging.getLogger("robustft.attacks")

NEEDS_MLM = ("bert-attack", "genetic", "bae")
ENGINE_KEYS = ("query_budget", "query_budget_unit", "pair_words", "time_limit_s", "recheck_full_precision")


class AllExamplesErrored(RobustftError):
    """Every attacked example ended as an error record: the run produced no number."""


def attack(cfg: AttackConfig, resume: bool = False, overwrite: bool = False) -> RunResult:
    """Run the attack; returns the run folder and metrics.json's content (a finished run of the same config is
    reused)."""
    recipe_config(cfg.recipe, cfg.protocol, cfg.recipe_args)  # the recipe's settings, before anything loads
    s = verbs.score_setup(
        cfg,
        log,
        defaults={"max_length": None, "precision": "auto"},
        output=lambda c: (c.recipe, c.protocol, c.task, c.split, f"n{c.n}", f"s{c.seed}"),
        default_split=lambda task: "test" if "test" in task.splits else "dev",
        keep=lambda e: protocol_keeps(cfg.protocol, e),
        recipe_args=dict(cfg.recipe_args),
    )
    cfg, (built, mlm_source) = s.cfg, build(s)
    s.inputs.update(
        {f"resource/{name}": resources.file_sha256(path) for name, path in built.resources().items()}
        | {
            "attack/config": config_hash(hashed_config(built.config())),
            "examples": config_hash([e.id for e in s.examples]),
        }
    )
    s.extra.update(
        attack=built.config(),
        recipe=cfg.recipe,
        examples=[e.id for e in s.examples],
        mlm=mlm_source,
        labels_note=s.labels_note,
        precision_used=runtime.resolve_precision(cfg.precision, s.device),
    )
    with runs.open_run(s.out, cfg, s.inputs, resume=resume, overwrite=overwrite, extra=s.extra, shard=s.shard) as run:
        if verbs.reuse(run, s.shard, log, "attack"):
            return result(s, run.metrics)
        if run.finished:  # this shard is done; the others may not be
            records, summary = [], run.metrics
        else:
            with verbs.logging_into(run, "attack.log"):
                records, summary = run_attack(
                    built,
                    s.examples,
                    run,
                    seed=cfg.seed,
                    progress=cfg.progress,
                    first=cfg.first,
                    concurrent=cfg.concurrent_examples,
                )
    part = f" (shard {s.shard[0]}/{s.shard[1]})" if s.shard else ""
    log.info("attack finished%s; run folder: %s", part, s.out)  # the summary is the caller's to show
    if records and summary["num_errors"] == len(records):
        raise AllExamplesErrored(
            f"all {len(records)} examples ended in errors (see {s.out}/attack.log); no number was produced"
        )
    if s.shard is not None and summary["complete"]:
        return result(s, runs.finish_shard(s.out, merge, cfg) or summary)
    return result(s, summary)


def build(s: verbs.Scoring):
    """The recipe's attack on the model as a victim, with its settings and masked LM; and where that LM came from."""
    cfg = s.cfg
    s.model.to(s.device).eval()
    victim = Victim(
        s.model,
        s.tokenizer,
        s.task,
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
        mlm[0].to(s.device)
    return build_attack(cfg.recipe, victim, cfg.protocol, settings, mlm=mlm), (
        getattr(mlm[0], "mlm_source", cfg.mlm) if mlm else None
    )


def result(s: verbs.Scoring, summary: dict) -> RunResult:
    """The run's result, its accuracy under attack as a fraction (metrics.json keeps TextAttack's percent): the
    examples still right after the attack, of those counted."""
    n = summary.get("num_examples")
    return s.result(summary, summary["num_failed"] / n if n else None)


def merge(path, strict: bool = False) -> dict | None:
    """Merge the shards of the attack run in `path` once all are finished (None until then)."""
    return runs.merge_shards(path, merged_summary, merged_csv, strict=strict)
