"""`robustft bench` end to end: one process with every core's thread against `--workers` processes sharing the
cores (one thread each on this 2-core machine), on a small version of the powered IM study (MiniLM, SST-2, BERT and
the picked IM setting, two seeds, one epoch, TextFooler and PWWS), each configuration run `--repeats` times,
interleaved, from an empty bench folder, through the CLI as a user runs it.

Wall time covers everything (process start, model loads, training, evaluations, attacks, the report). Each
configuration's accuracies and attack outcomes are compared per example with the other's: the computation differs
only in how many threads share a matrix product, which can move a bf16 result in its last bits.

    python benchmarks/bench_workers.py --workers 2 --repeats 2

Prints a table and saves benchmarks/results/bench_workers.json with the load average before and after each run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import load_average, save  # noqa: E402
from robustft.runtime import cpu_cores  # noqa: E402

# The powered study's methods and evaluations (configs/im-powered.yaml), scaled down so that attacks take about
# three quarters of the time, as they do there (seed 0: 8,850 of 12,300 s).
SMALL_STUDY = {
    "name": "workers",
    "model": "minilm",
    "tasks": ["sst2"],
    "sizes": [1000],
    "seeds": [0, 1],
    "baseline": "bert",
    "precision": "auto",
    "progress": False,
    "train": {"epochs": 1, "n_dev": 200, "batch_size": 32, "lr": 5.0e-5, "max_length": 128},
    "methods": {
        "bert": {},
        "im-inc-dt1": {
            "arch": "im",
            "im": {"form": "increment", "dt": 1.0, "layers": "4-6", "solver": "anderson", "K": 10, "grad": "explicit"},
        },
    },
    "evals": [{"task": "{task}", "split": "dev"}],
    "attacks": [
        {"recipe": "textfooler", "split": "test", "n": 20, "seed": 0},
        {"recipe": "pwws", "split": "test", "n": 20, "seed": 0},
    ],
}


def run_bench(spec: Path, out: Path, workers: int, threads: int) -> dict:
    """One bench from scratch through the CLI: its wall seconds, the load around it and its jobs' outcomes."""
    before = load_average()
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "robustft.cli", "bench", str(spec), "--output_dir", str(out)]
        + ["--workers", str(workers), "--threads", str(threads)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    wall = time.perf_counter() - start
    return {"wall_s": round(wall, 1), "load_before": before, "load_after": load_average(), "outcomes": outcomes(out)}


def outcomes(out: Path) -> dict:
    """{job folder: its accuracy, or its per-example attack results}."""
    found = {}
    for folder in sorted((out / "cells").rglob("metrics.json")):
        job = str(folder.parent.relative_to(out / "cells"))
        records = folder.parent / "examples.jsonl"
        if folder.parent.name.startswith("attack-"):
            rows = [json.loads(line) for line in records.read_text().splitlines()]
            found[job] = [(r["result"], r["adversarial"]) for r in rows]
        elif folder.parent.name.startswith("eval-"):
            found[job] = json.loads(folder.read_text()).get("accuracy")
    return found


def agreement(a: dict, b: dict) -> dict:
    """Per attack job: the share of examples with the same result, and with the same adversarial text; per
    evaluation: both accuracies."""
    report = {}
    for job in sorted(set(a) & set(b)):
        if isinstance(a[job], list):
            pairs = list(zip(a[job], b[job], strict=True))
            report[job] = {
                "same_result": round(sum(x[0] == y[0] for x, y in pairs) / len(pairs), 3),
                "same_text": round(sum(x == y for x, y in pairs) / len(pairs), 3),
            }
        else:
            report[job] = {"accuracy": [a[job], b[job]]}
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=cpu_cores())
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--name", default="bench_workers")
    args = parser.parse_args()
    cores = cpu_cores()
    configurations = {
        f"1 process x {cores} threads": (1, cores),
        f"{args.workers} workers x {max(1, cores // args.workers)} thread(s)": (
            args.workers,
            max(1, cores // args.workers),
        ),
    }
    runs: dict[str, list[dict]] = {name: [] for name in configurations}
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "workers.yaml"
        spec.write_text(yaml.safe_dump(SMALL_STUDY))
        for repeat in range(args.repeats):
            for name, (workers, threads) in configurations.items():
                row = run_bench(spec, Path(tmp) / f"{repeat}-{workers}", workers, threads)
                runs[name].append(row)
                print(f"repeat {repeat}: {name}: {row['wall_s']} s (load {row['load_before']} -> {row['load_after']})")
    one, many = list(configurations)
    speedups = [round(a["wall_s"] / b["wall_s"], 3) for a, b in zip(runs[one], runs[many], strict=True)]
    print("\n| configuration | wall s per repeat |\n|---|---|")
    for name, rows in runs.items():
        print(f"| {name} | {' / '.join(str(r['wall_s']) for r in rows)} |")
    print(f"speed-up of {many}: {' / '.join(f'{s:.2f}x' for s in speedups)}")
    save(
        args.name,
        {
            "study": SMALL_STUDY,
            "cores": cores,
            "runs": {
                name: [{k: v for k, v in r.items() if k != "outcomes"} for r in rows] for name, rows in runs.items()
            },
            "speedup": speedups,
            "agreement_first_repeat": agreement(runs[one][0]["outcomes"], runs[many][0]["outcomes"]),
            "agreement_repeats_of_one_process": agreement(runs[one][0]["outcomes"], runs[one][-1]["outcomes"]),
        },
    )


if __name__ == "__main__":
    main()
