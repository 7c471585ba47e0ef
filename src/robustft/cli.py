"""The `robustft` command. It only parses: every verb builds its dataclass config with the one loader
(defaults, then --config files, then --key value overrides) and calls the same Python function a user would
(`robustft.train`, `.evaluate`, `.attack`, `.probe`). User errors print as one line and exit with status 2."""

from __future__ import annotations

import argparse
import json
import sys
import warnings

from robustft.attacks.run import attack
from robustft.attacks.run import merge as merge_attack
from robustft.errors import ConfigError, RobustftError
from robustft.evaluation.probe import probe
from robustft.evaluation.run import evaluate
from robustft.evaluation.run import merge as merge_eval
from robustft.report.command import add_parser as add_report_parser
from robustft.training.loop import train

VERBS = {
    "train": (
        "fine-tune a model with a method",
        train,
        """examples:
  robustft train --n_train 1000 --epochs 3                     MiniLM on 1,000 SST-2 examples
  robustft train --config configs/sst2-minilm-1k.yaml --seed 1
  robustft train --task snli --method rift-snli --arch im --im.layers 1-6 --im.K 3
  robustft train --output_dir runs/a --resume                   continue a killed run exactly""",
    ),
    "eval": (
        "per-example accuracy of a model (or run folder) on a task split",
        evaluate,
        """examples:
  robustft eval --model runs/sst2-minilm-1k --task advglue-sst2 --split dev
  robustft eval --model my_model/ --task sst2 --split dev -n 500 --precision fp32""",
    ),
    "attack": (
        "attack a classifier with a word-substitution recipe",
        attack,
        """examples:
  robustft attack --model runs/sst2-minilm-1k --task sst2 --split dev --recipe textfooler -n 200
  robustft attack --model runs/sst2-minilm-1k --recipe pwws --protocol textdefender
  robustft attack --model my_model/ --task snli --recipe genetic --recipe_args.generations 20 --resume""",
    ),
    "probe": (
        "hidden-state distance per layer under perturbations (IM-BERT probe)",
        probe,
        """examples:
  robustft probe --models BERT=runs/bert --models IM-BERT=runs/im --output_dir probe/
  robustft probe --base minilm --variants plain,ex,im --im.layers 1-6 --im.K 3 --perturb noise""",
    ),
}

COMMON_HELP = """Settings come from the defaults, then --config files (YAML or JSON, applied in order), then overrides
written as --key value or --key=value; groups use dots (--im.K 3, --method_args.beta 5). The run folder gets
config.json, metrics.json and (where the verb has examples) examples.jsonl. A finished run of the same settings
is reused; --resume continues an interrupted one; --overwrite starts again.

{examples}

keys:
{keys}"""


def split_overrides(tokens: list[str]) -> list[str]:
    """['--a=1', '--b', '2', 'c=3', '-n', '5'] -> ['a=1', 'b=2', 'c=3', 'n=5']; a bare flag means true."""
    out, i = [], 0
    while i < len(tokens):
        token = tokens[i]
        if token == "-n":
            token = "--n"
        if not token.startswith("--") and "=" not in token:
            raise ConfigError(f"unexpected argument '{token}': write settings as --key value or --key=value")
        key = token.lstrip("-")
        if "=" in key:
            out.append(key)
        elif i + 1 < len(tokens) and not tokens[i + 1].startswith("--") and tokens[i + 1] != "-n":
            value = tokens[i + 1]
            out.append(f"set.{value}" if key == "set" else f"{key}={value}")  # old attack `--set k=v`
            i += 1
        else:
            out.append(f"{key}=true")
        i += 1
    return out


def call_verb(args) -> int:
    from robustft.config import VERB_CONFIGS, build_config

    cfg = build_config(VERB_CONFIGS[args.command], args.config or [], split_overrides(args.extra))
    result = VERBS[args.command][1](cfg, resume=args.resume, overwrite=args.overwrite)
    if main_process():
        print(summary_line(args.command, result))
    return 0


def main_process() -> bool:
    """Rank 0 under torchrun / accelerate launch (the others stay quiet), the one process otherwise."""
    from robustft.runtime import world

    return world().main


def summary_line(verb: str, result) -> str:
    if verb == "train":
        metrics = json.loads((result / "metrics.json").read_text())
        return (
            f"best dev accuracy {metrics['best']['dev_accuracy']:.4f} (epoch {metrics['best']['epoch']}); "
            f"{metrics['train_examples_per_s']} train examples/s; model in {result / 'best'}"
        )
    if verb == "attack":
        from robustft.attacks.results import format_summary

        return format_summary(result)
    return json.dumps(result, indent=2)


BENCH_HELP = """Train every method x task x size x seed cell, then evaluate and attack each model on identical examples;
every job is a run folder under <output_dir>/cells/ (finished ones are reused, interrupted ones resume), then the
report (Markdown, JSON, PNG, HTML) is built from the run folders. PRESET is one of {presets}, or a YAML/JSON file.

examples:
  robustft bench quick                                   the main job (BERT vs IM-BERT vs RIFT on SST-2)
  robustft bench advglue --list                          the jobs, their status and expected minutes
  robustft bench lowresource --only 'im-bert/*'          only the IM-BERT cells (and their evaluations)
  robustft bench rift --skip 'im-rift/*'                 every job but the IM + RIFT cells (run them later)
  robustft bench rift --skip 'im-rift/*' --skip 'rift/*' neither: --skip takes a glob each time it is given
  robustft bench rift --sizes [2000] --train.epochs 2    the RIFT protocol, smaller
  robustft bench quick --save docs/results/quick/runs    its progress, to commit; elsewhere: --restore ... to go on

keys:
{keys}"""


def cmd_bench(args) -> int:
    from robustft.bench.presets import bench_config
    from robustft.bench.run import bench

    cfg = bench_config(args.spec, split_overrides(args.extra))
    result = bench(
        cfg,
        only=args.only,
        skip=args.skip,
        list_only=args.list,
        overwrite=args.overwrite,
        save_to=args.save,
        restore_from=args.restore,
    )
    if args.list or args.save:
        return 0
    if "shard" in result and not result["complete"]:
        print(f"bench shard {result['shard']} done; the report is built when every job is (or: robustft report DIR)")
        return 0
    if result["folders"]:
        from robustft.bench.matrix import bench_dir
        from robustft.report import build_report
        from robustft.report.markdown import render_table
        from robustft.report.tables import overview_table
        from robustft.runs import SHARDS_LOCK, hold

        out = bench_dir(cfg) / "report"
        partners = [bench_dir(cfg).parent / name for name in cfg.report_with]
        for missing in [p for p in partners if not p.is_dir()]:
            print(f"report: without {missing} (report_with names it, but this machine has no such bench folder)")
        folders = [bench_dir(cfg), *(p for p in partners if p.is_dir())]
        with hold(bench_dir(cfg) / SHARDS_LOCK):  # shards finishing together build it one after the other
            summary = build_report(
                folders, out, baseline=cfg.baseline, bench_baseline=True, title=f"robustft bench {cfg.name}"
            )
        print(render_table(overview_table(summary)))
        print(f"report: {out / 'report.html'}")
    return 0


MERGERS = {"attack": merge_attack, "eval": merge_eval}


def cmd_merge(args) -> int:
    """Merge the shard files of an attack or eval run folder into what one process writes."""
    from robustft.runs import read_description

    saved = read_description(args.run_dir)
    if saved is None or saved.get("verb") not in MERGERS:
        raise ConfigError(f"merge: {args.run_dir} is not a robustft attack or eval run folder")
    result = MERGERS[saved["verb"]](args.run_dir, strict=True)
    print(summary_line(saved["verb"], result))
    return 0


def cmd_resources(args) -> int:
    from robustft.models.resource_check import check_all

    statuses = check_all()
    for s in statuses:
        print(f"{'found  ' if s.found else 'MISSING'}  {s.name:<32} {s.where}")
    missing = [s for s in statuses if not s.found]
    print(f"{len(statuses) - len(missing)} found, {len(missing)} missing")
    return 1 if missing else 0


def cmd_methods(args) -> int:
    from robustft.data.tasks import TASKS
    from robustft.training.objectives import OBJECTIVES

    print("methods:", ", ".join(sorted(OBJECTIVES)))
    print("tasks:")
    for task in TASKS.values():
        note = f"  ({task.note})" if task.note else ""
        print(f"  {task.name:<20} {'/'.join(task.label_names)}; splits: {', '.join(task.splits)}{note}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    from robustft.config import VERB_CONFIGS, describe_keys

    parser = argparse.ArgumentParser(
        prog="robustft",
        description="Robust fine-tuning of language models: train (IM-BERT, RIFT, adversarial training), evaluate, "
        "attack, probe, bench and report.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for verb, (summary, _, examples) in VERBS.items():
        p = sub.add_parser(
            verb,
            help=summary,
            formatter_class=argparse.RawDescriptionHelpFormatter,
            description=summary
            + "\n\n"
            + COMMON_HELP.format(examples=examples, keys=describe_keys(VERB_CONFIGS[verb])),
        )
        p.add_argument("--config", action="append", help="YAML/JSON config file (repeatable)")
        p.add_argument("--resume", action="store_true", help="continue the run in the output folder")
        p.add_argument("--overwrite", action="store_true", help="delete the run in the output folder first")
        p.set_defaults(func=call_verb, takes_overrides=True)

    from robustft.bench.presets import PRESETS

    p = sub.add_parser(
        "bench",
        help="a method x task x size x seed matrix, evaluated and attacked, with a report",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=BENCH_HELP.format(presets=", ".join(PRESETS), keys=describe_keys(VERB_CONFIGS["bench"])),
    )
    p.add_argument("spec", metavar="PRESET|CONFIG", help="a preset name or a YAML/JSON bench config")
    p.add_argument("--list", action="store_true", help="list the jobs with their status and expected minutes")
    p.add_argument(
        "--only", help="run only the jobs whose id matches this glob from its start, e.g. 'rift/*' (see --list)"
    )
    p.add_argument(
        "--skip",
        action="append",
        help="leave out the jobs whose id matches this glob (as --only), e.g. the costliest method (repeatable)",
    )
    p.add_argument("--overwrite", action="store_true", help="delete and redo the selected jobs")
    p.add_argument(
        "--save",
        metavar="DIR",
        help="save every started job's summaries and per-example lines (no models) to DIR, small enough to commit, "
        "and run nothing",
    )
    p.add_argument(
        "--restore",
        metavar="DIR",
        help="first bring back what --save wrote to DIR (on another machine, or before a fresh checkout), then go on; "
        "cells with jobs left are trained again from their seed, and their restored results checked against it",
    )
    p.set_defaults(func=cmd_bench, takes_overrides=True)

    p = sub.add_parser(
        "merge",
        help="merge the shards (--shard i/n, torchrun ranks) of an attack or eval run folder",
        description="Write examples.jsonl and metrics.json of a sharded attack or eval run from its "
        "shard files, exactly as one process writes them (the last shard to finish does it by "
        "itself). Refuses while a shard is missing, unfinished or was run with other settings.",
    )
    p.add_argument("run_dir", help="the run folder the shards share (their --output_dir)")
    p.set_defaults(func=cmd_merge)

    p = sub.add_parser("resources", help="where data, models and lexical resources are found")
    p.add_argument("action", choices=["check"])
    p.set_defaults(func=cmd_resources)

    p = sub.add_parser("methods", help="list training methods and tasks")
    p.set_defaults(func=cmd_methods)

    add_report_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and not getattr(args, "takes_overrides", False):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.extra = extra
    from robustft.runtime import quiet_libraries

    quiet_libraries()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always", FutureWarning)
            warnings.showwarning = lambda message, *a, **k: print(f"robustft: warning: {message}", file=sys.stderr)
            code = args.func(args)
    except RobustftError as exc:
        print(f"robustft: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # disk full, read-only folder, ...: name the path, keep what was written
        print(f"robustft: error: {exc.filename or ''}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("robustft: interrupted", file=sys.stderr)
        return 130
    return code or 0


__all__ = ["main", "build_parser", "split_overrides"]

if __name__ == "__main__":
    sys.exit(main())
