"""`robustft attack`: attack a trained classifier with a recipe and write a run folder."""

from __future__ import annotations

import argparse
import importlib
import json
from pathlib import Path

from robustft.errors import ConfigError, MissingResource

HELP = """Attack a classifier with a word-substitution recipe; the output folder gets config.json (recipe
settings, resource hashes), examples.jsonl (one line per example, written as each finishes), metrics.json
(TextAttack's summary) and examples.csv.

examples:
  robustft attack --model runs/sst2-minilm --task sst2 --recipe textfooler -n 1000 --seed 0
  robustft attack --model runs/sst2-minilm --task sst2 --recipe pwws --protocol textdefender --bf16
  robustft attack --model my_model/ --task snli --split test --recipe genetic --set generations=20 --resume
"""

def parse_value(text: str):
    low = text.lower()
    if low in ("none", "null"):
        return None
    if low in ("true", "false"):
        return low == "true"
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def parse_settings(items: list[str]) -> dict:
    out = {}
    for item in items or []:
        if "=" not in item:
            raise ConfigError(f"--set takes key=value, not {item!r}")
        key, value = item.split("=", 1)
        out[key.strip()] = parse_value(value.strip())
    return out


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("attack", help="attack a classifier with a word-substitution recipe",
                              description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="run folder (uses best/), model folder, alias or hub name")
    p.add_argument("--task", default="sst2")
    p.add_argument("--split", default=None, help="default: test if the task has one, else dev")
    p.add_argument("--recipe", required=True, help="pwws, textfooler, bert-attack, genetic or ascc")
    p.add_argument("-n", "--num-examples", type=int, default=1000, help="seeded sample size (all if larger)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--protocol", choices=["textdefender"], default=None,
                   help="unified constraints: 30%% words, similarity 0.840845, budget 50 x words")
    p.add_argument("--set", dest="settings", action="append", default=[], metavar="KEY=VALUE",
                   help="override a recipe setting (repeatable), e.g. --set neighbours=glove")
    p.add_argument("--query-budget", type=int, default=None, help="max distinct queries per example")
    p.add_argument("--out", default=None, help="output folder (default runs/attack/<model>-<task>-<recipe>...)")
    p.add_argument("--resume", action="store_true", help="continue the run in --out")
    p.add_argument("--first", type=int, default=None,
                   help="attack only the first K examples of the sample now (the rest later with --resume)")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--max-length", type=int, default=None)
    p.add_argument("--bf16", action="store_true", help="bf16 autocast for model calls")
    p.add_argument("--mlm", default=None, help="masked LM for bert-attack / the genetic LM filter")
    p.add_argument("--device", default=None, help="cpu, cuda, ... (default: cuda if available)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=run)
    return p


def default_out(args, split: str) -> Path:
    model = Path(args.model.rstrip("/")).name or "model"
    parts = [model, args.task, split, args.recipe] + ([args.protocol] if args.protocol else [])
    return Path("runs") / "attack" / "-".join(parts + [f"n{args.num_examples}", f"s{args.seed}"])


def run(args) -> int:
    import torch

    from robustft.attacks.results import format_summary
    from robustft.attacks.runner import examples_digest, hash_resources, run_attack, write_records
    from robustft.data.tasks import get_task, load_examples
    from robustft.models.factory import load_classifier

    if args.threads:
        torch.set_num_threads(args.threads)
    task = get_task(args.task)
    split = args.split or ("test" if "test" in task.splits else "dev")
    from robustft.evaluate.command import resolve_saved_model  # run folder -> its best/ model

    model_ref, _ = resolve_saved_model(args.model)
    model, tokenizer = load_classifier(model_ref)
    if model.config.num_labels != task.num_labels:
        raise ConfigError(f"model {args.model} has {model.config.num_labels} labels, task {task.name} has "
                          f"{task.num_labels}")
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    model.to(device).eval()
    examples = load_examples(task.name, split, n=args.num_examples, seed=args.seed)
    out = Path(args.out) if args.out else default_out(args, split)
    config = {"model": model_ref, "model_files": hash_resources(model_files(model_ref)), "task": task.name,
              "split": split, "num_examples": len(examples), "examples_sha256": examples_digest(examples),
              "data_files": data_files(task.name, split), "seed": args.seed, "recipe": args.recipe,
              "protocol": args.protocol, "versions": versions()}
    settings = parse_settings(args.settings)

    if args.recipe == "ascc":
        try:
            ascc = importlib.import_module("robustft.attacks.ascc")
        except ModuleNotFoundError as exc:
            raise MissingResource("the ascc attack (robustft.attacks.ascc) is not in this install") from exc
        config["attack"] = {"recipe": "ascc", "settings": settings}
        records = ascc.run_ascc_attack(model, tokenizer, task, examples, seed=args.seed, **settings)
        summary = write_records(out, config, records)
    else:
        from robustft.attacks.recipes import build_attack
        from robustft.attacks.victim import Victim

        victim = Victim(model, tokenizer, task, max_length=args.max_length, batch_size=args.batch_size,
                        bf16=args.bf16, device=device)
        if args.query_budget is not None:
            settings["query_budget"] = args.query_budget
        mlm = None
        if args.recipe == "bert-attack" or (args.recipe == "genetic" and settings.get("lm_scorer", 1) is not None):
            from robustft.models.mlm import load_masked_lm

            mlm = load_masked_lm(args.mlm)
            mlm[0].to(device)
            config["mlm"] = getattr(mlm[0], "mlm_source", args.mlm)
        attack = build_attack(args.recipe, victim, args.protocol, settings, mlm=mlm)
        config["attack"] = attack.config()
        config["resources"] = hash_resources(attack.resources())
        _, summary = run_attack(attack, examples, out, config, seed=args.seed, resume=args.resume,
                                progress=not args.no_progress, first=args.first)
    print(format_summary(summary))
    print(f"run folder: {out}")
    return 0


def model_files(ref: str) -> dict[str, str]:
    from robustft import resources

    folder = Path(resources.resolve_model(ref))
    if not folder.is_dir():
        return {}
    return {p.name: str(p) for p in sorted(folder.glob("*.safetensors"))}


def versions() -> dict:
    try:
        from robustft.train.run_folder import code_version

        return code_version()
    except ImportError:
        import torch
        import transformers

        return {"torch": torch.__version__, "transformers": transformers.__version__}


def data_files(task_name: str, split: str) -> dict:
    try:
        from robustft.train.run_folder import data_versions
    except ImportError:
        return {}
    return data_versions(task_name, [split])
