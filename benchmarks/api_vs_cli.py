"""The Python API is the CLI: the same attack, run as `robustft.attack(AttackConfig(...))` in a fresh interpreter and
as `robustft attack ...`, takes the same time, on a quiet machine and beside a process that competes for the cores.

Both start a new Python process (imports, model load and attack inside the timing) and write their own run folder
(--overwrite); the pairs run interleaved, API first then CLI, so a ratio compares runs a few seconds apart. Each
pair gives two ratios API / CLI: of the whole process's wall time and of the attack loop's own wall time
(metrics.json's wall_seconds_this_session). The records of the two must be identical (same seeded examples, same
model, same settings): the JSON says whether they are.

    python benchmarks/api_vs_cli.py --n 50 --repeats 3            # PWWS on 50 SST-2 dev examples, MiniLM

The model: --model RUN, or (default) a MiniLM fine-tuned here once on 200 SST-2 examples for one epoch, cached in
--workdir. The competitor: a process running fp32 matrix products on every core, OpenMP threads spinning (the
default wait policy), as another user's job would. Saves benchmarks/results/api_vs_cli.json with the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import load_average, save  # noqa: E402

API_SCRIPT = """
import json, sys
import robustft
from robustft import AttackConfig
cfg = AttackConfig(**json.loads(sys.argv[1]))
robustft.attack(cfg, overwrite=True)
"""

COMPETITOR = """
import torch
torch.set_num_threads({threads})
a = torch.randn(768, 768)
while True:
    a = torch.tanh(a @ a)
"""


def trained_model(workdir: Path) -> str:
    """A MiniLM fine-tuned on 200 SST-2 examples (one epoch), trained once and then reused."""
    from robustft import TrainConfig, train

    cfg = TrainConfig(model="minilm", task="sst2", n_train=200, n_dev=200, epochs=1, output_dir=str(workdir / "model"))
    return str(train(cfg, progress=False))


def attack_settings(args, out: Path) -> dict:
    return {
        "model": args.model,
        "task": "sst2",
        "split": "dev",
        "recipe": args.recipe,
        "n": args.n,
        "seed": 0,
        "progress": False,
        "output_dir": str(out),
    }


def cli_args(settings: dict) -> list[str]:
    out = [sys.executable, "-m", "robustft.cli", "attack", "--overwrite"]
    for key, value in settings.items():
        out += [f"--{key}", str(value).lower() if isinstance(value, bool) else str(value)]
    return out


def run_once(how: str, settings: dict) -> dict:
    """One fresh process, API or CLI: its wall time, the attack loop's wall time and the records' digest."""
    command = cli_args(settings) if how == "cli" else [sys.executable, "-c", API_SCRIPT, json.dumps(settings)]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=os.environ.copy())
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{how} run failed ({done.returncode}):\n{done.stderr[-2000:]}")
    out = Path(settings["output_dir"])
    metrics = json.loads((out / "metrics.json").read_text())
    records = [
        {k: v for k, v in json.loads(line).items() if k not in ("seconds",)}
        for line in (out / "examples.jsonl").read_text().splitlines()
    ]
    return {"wall_s": round(wall, 2), "attack_s": metrics["wall_seconds_this_session"], "records": records}


def pairs(args, condition: str, workdir: Path) -> list[dict]:
    """`repeats` interleaved API / CLI pairs under one condition (quiet, or beside the competitor)."""
    rows = []
    for repeat in range(args.repeats):
        load_before = load_average()
        api = run_once("api", attack_settings(args, workdir / f"{condition}-api-{repeat}"))
        cli = run_once("cli", attack_settings(args, workdir / f"{condition}-cli-{repeat}"))
        row = {
            "repeat": repeat,
            "api_wall_s": api["wall_s"],
            "cli_wall_s": cli["wall_s"],
            "api_attack_s": api["attack_s"],
            "cli_attack_s": cli["attack_s"],
            "wall_ratio": round(api["wall_s"] / cli["wall_s"], 4),
            "attack_ratio": round(api["attack_s"] / cli["attack_s"], 4),
            "same_records": api["records"] == cli["records"],
            "load_before": load_before,
            "load_after": load_average(),
        }
        print(condition, row, flush=True)
        rows.append(row)
    return rows


def summary(rows: list[dict]) -> dict:
    return {
        "median_wall_ratio": round(statistics.median(r["wall_ratio"] for r in rows), 4),
        "median_attack_ratio": round(statistics.median(r["attack_ratio"] for r in rows), 4),
        "all_records_identical": all(r["same_records"] for r in rows),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", help="run folder or model folder (default: train a small MiniLM once)")
    parser.add_argument("--recipe", default="pwws")
    parser.add_argument("--n", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--competitor_threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--workdir", default="/tmp/robustft_api_vs_cli")
    parser.add_argument("--name", default="api_vs_cli")
    args = parser.parse_args()
    workdir = Path(args.workdir)
    args.model = args.model or trained_model(workdir)

    results = {"quiet": pairs(args, "quiet", workdir)}
    competitor = subprocess.Popen([sys.executable, "-c", COMPETITOR.format(threads=args.competitor_threads)])
    try:
        time.sleep(3)  # the competitor's first products are under way
        results["competing"] = pairs(args, "competing", workdir)
    finally:
        competitor.kill()
        competitor.wait()
    verdict = {condition: summary(rows) for condition, rows in results.items()}
    print(json.dumps(verdict, indent=2))
    save(
        args.name,
        {
            "settings": {
                "recipe": args.recipe,
                "n": args.n,
                "repeats": args.repeats,
                "model": args.model,
                "competitor_threads": args.competitor_threads,
                "omp_wait_policy_outside": os.environ.get("OMP_WAIT_POLICY"),
            },
            "note": "each row: one API process and one CLI process, run one after the other; ratio = API / CLI",
            "summary": verdict,
            "rows": results,
        },
    )


if __name__ == "__main__":
    main()
