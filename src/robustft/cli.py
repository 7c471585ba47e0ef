"""The `robustft` command. Thin: it parses, builds the same dataclass configs as the Python API, and calls
the library. User errors print as one line (no traceback) and exit with status 2."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys

from robustft.errors import ConfigError, RobustftError

# Subcommands other parts of the package contribute: each module has add_parser(subparsers).
PLUGIN_COMMANDS = ("robustft.attacks.command", "robustft.models.probe_command")

TRAIN_HELP = """Train a classifier with one method on one task; the run folder gets config.json, metrics.json,
train.log, checkpoint/ and best/ (the best-on-dev model, loadable with from_pretrained).

Settings come from the defaults, then --config files (YAML or JSON, applied in order), then overrides
written as --key=value or --key value. Groups use dots: --im.K 3, --method_args.beta 5.

examples:
  robustft train --n_train 1000 --epochs 3                     MiniLM on 1,000 SST-2 examples
  robustft train --config configs/sst2-minilm-1k.yaml --seed 1
  robustft train --task snli --train_split train --method rift --arch im --im.layers 1-6 --im.K 3
  robustft train --output_dir runs/a --resume                   continue a killed run exactly

keys (see robustft.config.TrainConfig):
{keys}"""


def _train_keys() -> str:
    import dataclasses

    from robustft.config import TrainConfig

    return "\n".join(
        f"  --{f.name:<18} default {getattr(TrainConfig(), f.name)!r}" for f in dataclasses.fields(TrainConfig)
    )


def split_overrides(tokens: list[str]) -> list[str]:
    """['--a=1', '--b', '2', 'c=3'] -> ['a=1', 'b=2', 'c=3']; a bare flag means true."""
    out, i = [], 0
    while i < len(tokens):
        token = tokens[i]
        if not token.startswith("--") and "=" not in token:
            raise ConfigError(f"unexpected argument '{token}': write settings as --key value or --key=value")
        key = token.lstrip("-")
        if "=" in key:
            out.append(key)
        elif i + 1 < len(tokens) and not tokens[i + 1].startswith("--"):
            out.append(f"{key}={tokens[i + 1]}")
            i += 1
        else:
            out.append(f"{key}=true")
        i += 1
    return out


def cmd_train(args) -> int:
    from robustft.config import TrainConfig, build_config
    from robustft.train.loop import train

    cfg = build_config(TrainConfig, args.config or [], split_overrides(args.extra))
    run_dir = train(cfg, resume=args.resume, overwrite=args.overwrite, progress=not args.quiet)
    metrics = json.loads((run_dir / "metrics.json").read_text())
    print(
        f"best dev accuracy {metrics['best']['dev_accuracy']:.4f} (epoch {metrics['best']['epoch']}); "
        f"{metrics['train_examples_per_s']} train examples/s; model in {run_dir / 'best'}"
    )
    return 0


def cmd_eval(args) -> int:
    from robustft.evaluate.command import evaluate_saved

    result = evaluate_saved(
        args.model,
        args.task,
        args.split,
        n=args.n,
        seed=args.seed,
        max_length=args.max_length,
        batch_size=args.batch_size,
        bf16=not args.no_bf16,
        output=args.output,
    )
    print(json.dumps(result, indent=2))
    return 0


def cmd_resources(args) -> int:
    from robustft.resources import check_all

    statuses = check_all()
    for s in statuses:
        print(f"{'found  ' if s.found else 'MISSING'}  {s.name:<32} {s.where}")
    missing = [s for s in statuses if not s.found]
    print(f"{len(statuses) - len(missing)} found, {len(missing)} missing")
    return 1 if missing else 0


def cmd_methods(args) -> int:
    from robustft.data.tasks import TASKS
    from robustft.train.objectives import OBJECTIVES

    print("methods:", ", ".join(sorted(OBJECTIVES)))
    print("tasks:")
    for task in TASKS.values():
        note = f"  ({task.note})" if task.note else ""
        print(f"  {task.name:<20} {'/'.join(task.label_names)}; splits: {', '.join(task.splits)}{note}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="robustft",
        description="Robust fine-tuning of language models: "
        "train (IM-BERT, RIFT, adversarial training), evaluate, attack.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser(
        "train",
        help="fine-tune a model with a method",
        description=TRAIN_HELP.format(keys=_train_keys()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--config", action="append", help="YAML/JSON config file (repeatable)")
    p.add_argument("--resume", action="store_true", help="continue the run in the output folder from its checkpoint")
    p.add_argument("--overwrite", action="store_true", help="delete an existing run folder first")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=cmd_train, takes_overrides=True)

    p = sub.add_parser("eval", help="clean accuracy of a saved model on a task split")
    p.add_argument("--model", required=True, help="run folder (its best/ model is used) or model folder or hub name")
    p.add_argument("--task", required=True)
    p.add_argument("--split", default="dev")
    p.add_argument("-n", type=int, default=None, help="seeded sample of n examples")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max_length", type=int, default=None, help="default: the run's max_length, else 128")
    p.add_argument("--batch_size", type=int, default=128)
    p.add_argument("--no-bf16", action="store_true", help="evaluate in float32")
    p.add_argument("--output", help="also write the result as JSON here")
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("resources", help="where data, models and lexical resources are found")
    p.add_argument("action", choices=["check"])
    p.set_defaults(func=cmd_resources)

    p = sub.add_parser("methods", help="list training methods and tasks")
    p.set_defaults(func=cmd_methods)

    for module_name in PLUGIN_COMMANDS:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            continue
        module.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and not getattr(args, "takes_overrides", False):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.extra = extra
    quiet_libraries()
    try:
        code = args.func(args)
    except RobustftError as exc:
        print(f"robustft: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("robustft: interrupted", file=sys.stderr)
        return 130
    return code or 0


def quiet_libraries() -> None:
    """transformers' load reports and shard bars drown our own progress; keep its warnings and errors."""
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()


if __name__ == "__main__":
    sys.exit(main())
