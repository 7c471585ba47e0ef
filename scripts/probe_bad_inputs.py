"""Probe robustft with bad input and count: tried / clean one-line error / traceback / accepted silently.

Malformed data files (tests/bad_data_cases.py) are built in a temporary data root that mirrors the real
one, read in-process through `robustft.data.tasks.load_examples`:
  clean      a RobustftError whose message is one line and names a file of the split
  traceback  any other exception (the CLI would print a traceback)
  silent     examples were returned

Bad setting values (`--values`, tests/reliability/bad_value_cases.py, issue 52) go in-process through the config
loader (`build_config`, or the recipe loader for attack settings), classified as for data files ("clean": a
one-line RobustftError holding the case's expected message). With them, a data file missing from a local data
root, with the offline variables unset, is timed in a fresh process: "clean" is its one-line error naming the
file within 5 s ("slow" otherwise: `datasets`' DNS retries).

Bad CLI values (`--cli`, slower: one process each) run `python -m robustft.cli ...`:
  clean      exit 2, no traceback on stderr
  traceback  "Traceback" on stderr
  silent     exit 0 (or any other status without a traceback)
Extend CLI_CASES with more; each is (name, argv) with {model} and {out} placeholders.

    ROBUSTFT_DATA=../shared/data PYTHONPATH=src python scripts/probe_bad_inputs.py [--cli] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "reliability"))

from bad_value_cases import CASES as VALUE_CASES  # noqa: E402
from bad_value_cases import outcome as value_outcome  # noqa: E402

from bad_data_cases import CASES, build  # noqa: E402

SMALL_TRAIN = [
    "train",
    "--task",
    "sst2",
    "--model",
    "{model}",
    "--output_dir",
    "{out}",
    "--n_train",
    "16",
    "--n_dev",
    "16",
    "--epochs",
    "1",
    "--quiet",
]
CLI_CASES: list[tuple[str, list[str]]] = [  # the lead's part of issue 15 (item 2): extend here
    ("eval batch_size -4", ["eval", "--model", "{model}", "--task", "sst2", "-n", "16", "--batch_size", "-4"]),
    ("eval batch_size 0", ["eval", "--model", "{model}", "--task", "sst2", "-n", "16", "--batch_size", "0"]),
    ("eval n -3", ["eval", "--model", "{model}", "--task", "sst2", "-n", "-3"]),
    ("eval max_length -5", ["eval", "--model", "{model}", "--task", "sst2", "-n", "16", "--max_length", "-5"]),
    ("eval unknown split", ["eval", "--model", "{model}", "--task", "sst2", "--split", "nope"]),
    ("eval missing model folder", ["eval", "--model", "./no/such/model", "--task", "sst2"]),
    ("train lr inf", [*SMALL_TRAIN, "--lr", "inf"]),
    ("train max_grad_norm nan", [*SMALL_TRAIN, "--max_grad_norm", "nan"]),
    ("train dev_split test", [*SMALL_TRAIN, "--dev_split", "test"]),
    (
        "train n_train beyond split",
        [
            *SMALL_TRAIN[:7],
            "--train_split",
            "kshot13-train",
            "--n_train",
            "1000",
            "--n_dev",
            "16",
            "--epochs",
            "1",
            "--quiet",
        ],
    ),
    ("train overwrite cwd", ["train", "--task", "foo", "--output_dir", ".", "--overwrite"]),
    ("train overwrite cwd, valid config", ["train", "--output_dir", ".", "--overwrite", "--n_train", "8"]),
    ("train epochs 0", [*SMALL_TRAIN, "--epochs", "0"]),
    ("train batch_size -1", [*SMALL_TRAIN, "--batch_size", "-1"]),
    ("train warmup_ratio 2", [*SMALL_TRAIN, "--warmup_ratio", "2"]),
    ("train lr -1", [*SMALL_TRAIN, "--lr", "-1"]),
    ("train precision fp8", [*SMALL_TRAIN, "--precision", "fp8"]),
    ("train unknown method", [*SMALL_TRAIN, "--method", "nope"]),
    ("train unknown arch", [*SMALL_TRAIN, "--arch", "resnet"]),
    ("train on an AdvGLUE set", [*SMALL_TRAIN, "--task", "advglue-sst2", "--train_split", "dev"]),
    ("train cuda without a GPU", [*SMALL_TRAIN, "--device", "cuda"]),
    ("train threads 0", [*SMALL_TRAIN, "--threads", "0"]),
    ("train unknown key", [*SMALL_TRAIN, "--epoch", "3"]),
    ("eval unknown task", ["eval", "--model", "{model}", "--task", "nope"]),
    ("eval no model", ["eval", "--task", "sst2"]),
    ("eval model of another task", ["eval", "--model", "{model}", "--task", "rte", "-n", "4"]),
    ("attack batch_size -1", ["attack", "--model", "{model}", "--split", "dev", "-n", "2", "--batch_size", "-1"]),
    ("attack batch_size 0", ["attack", "--model", "{model}", "--split", "dev", "-n", "2", "--batch_size", "0"]),
    ("attack max_length -5", ["attack", "--model", "{model}", "--split", "dev", "-n", "2", "--max_length", "-5"]),
    ("attack n 0", ["attack", "--model", "{model}", "--split", "dev", "-n", "0"]),
    ("attack query_budget 0", ["attack", "--model", "{model}", "--split", "dev", "-n", "2", "--query_budget", "0"]),
    ("attack unknown recipe", ["attack", "--model", "{model}", "--split", "dev", "-n", "2", "--recipe", "nope"]),
    ("attack unknown protocol", ["attack", "--model", "{model}", "--split", "dev", "-n", "2", "--protocol", "x"]),
    (
        "attack unknown recipe setting",
        ["attack", "--model", "{model}", "--split", "dev", "-n", "2", "--recipe_args.nope", "1"],
    ),
    ("attack model of another task", ["attack", "--model", "{model}", "--task", "rte", "--split", "dev", "-n", "2"]),
    (
        "attack into a training run",
        ["attack", "--model", "{model}", "--split", "dev", "-n", "1", "--output_dir", "{train_run}"],
    ),
    ("probe n 0", ["probe", "--models", "{model}", "-n", "0"]),
    ("probe unknown perturbation", ["probe", "--models", "{model}", "--perturb", "xyz"]),
    ("probe noise -1", ["probe", "--models", "{model}", "--noise", "-1"]),
    ("probe no model", ["probe"]),
    # issue 52: one process each for the values the reviewer runs (the rest are --values, in-process)
    ("train im.eta inf", [*SMALL_TRAIN, "--arch", "im", "--im.eta", "inf"]),
    ("train im.eta 1e30", [*SMALL_TRAIN, "--arch", "im", "--im.eta", "1e30"]),
    ("train im.K nan", [*SMALL_TRAIN, "--arch", "im", "--im.K", "nan"]),
    ("train seed 1e30", [*SMALL_TRAIN, "--seed", "1e30"]),
    ("train threads 1e9", [*SMALL_TRAIN, "--threads", "1000000000"]),
    ("train rift beta abc", [*SMALL_TRAIN, "--method", "rift", "--method_args.beta", "abc"]),
    ("train rift beta -5", [*SMALL_TRAIN, "--method", "rift", "--method_args.beta", "-5"]),
    ("train output_dir ~", ["train", "--model", "{model}", "--n_train", "16", "--output_dir", "~"]),
    (
        "attack max_candidates 0",
        ["attack", "--model", "{model}", "--split", "dev", "-n", "2", "--recipe_args.max_candidates", "0"],
    ),
]

MISSING_FILE_SCRIPT = """
import time
from robustft.data import tasks
from robustft.errors import MissingResource
start = time.perf_counter()
try:
    tasks.load_examples("ag_news", "test")
    print("loaded")
except MissingResource as exc:
    print(f"{time.perf_counter() - start:.2f}")
    print(exc)
"""


def classify_data(case, real_root: Path) -> tuple[str, str]:
    from robustft.data import tasks
    from robustft.errors import RobustftError

    with tempfile.TemporaryDirectory() as tmp:
        build(case, real_root, Path(tmp))
        os.environ["ROBUSTFT_DATA"] = tmp
        cache_clear = getattr(getattr(tasks, "_read_split", None), "cache_clear", None)
        if cache_clear:  # robustft before issue 15 cached splits by (task, split), whatever the data root
            cache_clear()
        try:
            examples = tasks.load_examples(case.task, case.split)
        except RobustftError as exc:
            message = str(exc)
            named = [(Path(tmp) / f).name for f in tasks.get_task(case.task).splits[case.split].files]
            if "\n" not in message and any(name in message for name in named):
                return "clean", message
            return "traceback", f"unclear error: {message!r}"
        except Exception as exc:  # noqa: BLE001 - classifying, not handling
            return "traceback", f"{type(exc).__name__}: {exc}"[:200]
        finally:
            os.environ["ROBUSTFT_DATA"] = str(real_root)
        return "silent", f"{len(examples)} examples"


def classify_cli(argv: list[str], model: str) -> tuple[str, str]:
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as out:
        sentinel = Path(out) / "not-robustft.txt"  # a file the command must never delete
        sentinel.write_text("a user's file\n")
        train_run = Path(out) / "trained"
        train_run.mkdir()
        (train_run / "config.json").write_text(
            json.dumps({"robustft_run": 1, "verb": "train", "config": {}, "hash": "x"})
        )
        cmd = [
            sys.executable,
            "-m",
            "robustft.cli",
            *(a.format(model=model, out=out + "/run", train_run=train_run) for a in argv),
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=out)
        lost = "" if sentinel.exists() else "DELETED A FILE IT DID NOT WRITE; "
    last = lost + (proc.stderr.strip().splitlines() or [""])[-1][:200]
    if "Traceback" in proc.stderr:
        return "traceback", last
    if lost:
        return "silent", f"exit {proc.returncode}: {last}"
    if proc.returncode == 2:
        return "clean", last
    return "silent", f"exit {proc.returncode}: {last}"


def classify_missing_local_file() -> tuple[str, str]:
    """ag_news/test (it has a Hub twin) under an empty data root, offline variables unset, in a fresh process."""
    offline = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE")
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if k not in offline}
        env.update(ROBUSTFT_DATA=tmp, PYTHONPATH=str(ROOT / "src"))
        proc = subprocess.run([sys.executable, "-c", MISSING_FILE_SCRIPT], env=env, capture_output=True, text=True)
        lines = proc.stdout.splitlines()
        if len(lines) != 2:
            return ("silent" if lines == ["loaded"] else "traceback"), (proc.stdout + proc.stderr)[-200:]
        seconds, message = float(lines[0]), lines[1]
        named = str(Path(tmp) / "ag_news" / "test.csv") in message
        return ("clean" if named and seconds < 5 else "slow"), f"{seconds:.1f} s: {message[:160]}"


def tiny_model(folder: Path) -> str:
    from robustft.models.factory import tiny_bert

    model, tokenizer = tiny_bert(2, id2label={0: "negative", 1: "positive"}, label2id={"negative": 0, "positive": 1})
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


def table(rows: list[dict], title: str) -> str:
    counts = Counter(r["outcome"] for r in rows)
    return f"| {title} | {len(rows)} | {counts['clean']} | {counts['traceback']} | {counts['silent']} |"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cli", action="store_true", help="also run the bad CLI values (one process each)")
    parser.add_argument("--values", action="store_true", help="also the bad setting values (in-process, fast)")
    parser.add_argument("--skip-data", action="store_true", help="no malformed data files")
    parser.add_argument("--only", help="only the cases whose name contains this")
    parser.add_argument("--json", help="write every case and its outcome to this file")
    args = parser.parse_args()
    real_root = Path(os.environ["ROBUSTFT_DATA"]).resolve()

    data_rows = []
    for case in [] if args.skip_data else CASES:
        if args.only and args.only not in case.name:
            continue
        outcome, detail = classify_data(case, real_root)
        data_rows.append({"kind": "data", "name": case.name, "outcome": outcome, "detail": detail})
        print(f"{outcome:9s} {case.name}: {detail}", flush=True)
    value_rows = []
    if args.values:
        for case in VALUE_CASES:
            if args.only and args.only not in case.name:
                continue
            outcome, detail = value_outcome(case)
            value_rows.append({"kind": "values", "name": case.name, "outcome": outcome, "detail": detail})
            print(f"{outcome:9s} {case.name}: {detail}", flush=True)
        outcome, detail = classify_missing_local_file()
        value_rows.append({"kind": "offline", "name": "missing local data file", "outcome": outcome, "detail": detail})
        print(f"{outcome:9s} missing local data file, offline variables unset: {detail}", flush=True)
    cli_rows = []
    if args.cli:
        with tempfile.TemporaryDirectory() as tmp:
            model = tiny_model(Path(tmp) / "tiny")
            for name, argv in CLI_CASES:
                if args.only and args.only not in name:
                    continue
                outcome, detail = classify_cli(argv, model)
                cli_rows.append({"kind": "cli", "name": name, "outcome": outcome, "detail": detail})
                print(f"{outcome:9s} {name}: {detail}", flush=True)

    print("\n| tried | n | clean one-line error | traceback | accepted silently or exit 0 |\n|---|---|---|---|---|")
    if data_rows:
        print(table(data_rows, "malformed data files"))
    if value_rows:
        print(table([r for r in value_rows if r["kind"] == "values"], "bad setting values (in-process)"))
        print(table([r for r in value_rows if r["kind"] == "offline"], "missing local data file, 5 s limit"))
    if cli_rows:
        print(table(cli_rows, "bad CLI values"))
    if args.json:
        rows = data_rows + value_rows + cli_rows
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
