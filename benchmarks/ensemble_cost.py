"""What an ensemble defense costs per prediction: seconds per example of SAFER, RanMASK and DNE ensembles of N copies
against the plain classifier, each at two sizes of the forward that carries the copies (`--chunks`, rows per
forward), timed interleaved in one process so the ratios compare on a loaded machine.

    nice -n 10 python benchmarks/ensemble_cost.py --model minilm --n 32 --copies 12 100 --chunks 32 512 --repeats 2

Every attack query of an ensemble model pays this ratio: an ensemble of N copies costs about N times the plain
classifier's model time; the chunk size decides what comes on top (CPU caches favour small forwards).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from statistics import median

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import load_average, load_sst2_victim, save  # noqa: E402
from robustft import resources  # noqa: E402
from robustft.data.example import Example  # noqa: E402
from robustft.data.tasks import get_task, load_examples  # noqa: E402
from robustft.defenses.ensemble import EnsembleClassifier, EnsembleSettings  # noqa: E402
from robustft.models.predict import class_probs  # noqa: E402


def seconds(model, tok, examples, batch_size: int) -> float:
    start = time.perf_counter()
    class_probs(model, tok, examples, max_length=64, batch_size=batch_size, precision="fp32")
    return time.perf_counter() - start


def step_candidates(examples, neighbours: dict) -> list:
    """One greedy attack step per sentence: the sentence with each word that has a neighbour swapped for it."""
    out = []
    for ex in examples:
        words = ex.text_a.split()
        for i, w in enumerate(words):
            if neighbours.get(w.lower()):
                out.append(Example(" ".join([*words[:i], neighbours[w.lower()][0], *words[i + 1 :]]), ex.label))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--n", type=int, default=32, help="SST-2 dev sentences")
    parser.add_argument("--copies", type=int, nargs="+", default=[12, 100])
    parser.add_argument("--kinds", nargs="+", default=["safer", "ranmask", "dne"])
    parser.add_argument("--batch-size", type=int, default=32, help="examples per prediction call (the victim's)")
    parser.add_argument("--chunks", type=int, nargs="+", default=[32, 512], help="rows per forward of the copies")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--step", action="store_true", help="score one attack step's candidates per sentence")
    parser.add_argument("--name", default="ensemble_cost")
    args = parser.parse_args()

    torch.set_num_threads(max(1, torch.get_num_threads()))
    model, tok = load_sst2_victim(args.model)
    task = get_task("sst2")
    examples = load_examples("sst2", "dev", n=args.n, seed=0)
    if args.step:
        examples = step_candidates(examples, resources.counterfitted_neighbors())
    variants = {"plain": model}
    for kind in args.kinds:
        for n in args.copies:
            for chunk in args.chunks:
                settings = EnsembleSettings(kind, copies=n, chunk=chunk)
                for mode in ("every", "distinct"):
                    ensemble = EnsembleClassifier(model, tok, task, settings, distinct_only=mode == "distinct")
                    variants[f"{kind}-{n}-chunk{chunk}-{mode}"] = ensemble
    for variant in variants.values():  # warm-up: tables, allocator, first-shape costs
        seconds(variant, tok, examples[:4], args.batch_size)
    load_before = load_average()
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(args.repeats):
        for name, variant in variants.items():  # interleaved: the machine's load hits every variant alike
            times[name].append(seconds(variant, tok, examples, args.batch_size) / len(examples))
    plain = median(times["plain"])
    rows = {
        name: {
            "seconds_per_example": round(median(t), 5),
            "ratio_to_plain": round(median(t) / plain, 2),
            "repeats": [round(x, 5) for x in t],
        }
        for name, t in times.items()
    }
    for name, row in rows.items():
        print(f"{name:>32}: {row['seconds_per_example'] * 1000:9.1f} ms/example, {row['ratio_to_plain']:7.2f}x plain")
    save(
        args.name,
        {
            "what": "seconds per example of ensemble prediction vs the plain classifier (interleaved, median)",
            "note": "shared 2-core machine, loaded by other engineers' jobs during the run: read the ratios, not "
            "the absolute seconds",
            "model": args.model,
            "n": args.n,
            "texts": len(examples),
            "step": args.step,
            "batch_size": args.batch_size,
            "chunks": args.chunks,
            "max_length": 64,
            "precision": "fp32",
            "load_average_1m_before": load_before,
            "load_average_1m_after": load_average(),
            "results": rows,
        },
    )


if __name__ == "__main__":
    main()
