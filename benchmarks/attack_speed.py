"""Attack speed per recipe: examples/s and queries/s of the batched, cached victim, and its speed-up over
one-query-at-a-time calls (no batching, no cache) and over TextAttack-like calls (batched and cached but
every query padded to the model maximum, as TextAttack's HuggingFaceModelWrapper does).

TextAttack itself cannot be installed here usefully (it pins transformers<5), so the baselines are our own
victim with its speed features switched off; the search, transformation and constraints are identical,
so success rates must match (bf16 may move a borderline example).

    python benchmarks/attack_speed.py --model /work/scratch/train_sst2_minilm_1k --n 20 --baseline-n 6

Prints a table and saves benchmarks/results/attack_speed.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import torch

from robustft.attacks.recipes import RECIPES, build_attack
from robustft.attacks.results import summarize
from robustft.attacks.victim import MODES, Victim
from robustft.data.tasks import load_examples
from robustft.errors import MissingResource
from robustft.evaluate.command import resolve_saved_model
from robustft.models.factory import load_classifier

RESULTS = Path(__file__).resolve().parent / "results" / "attack_speed.json"


def measure(recipe, model, tok, examples, mode: str, bf16: bool, mlm, batch_size: int, budget=None) -> dict:
    victim = Victim(model, tok, "sst2", batch_size=batch_size, bf16=bf16, mode=MODES[mode])
    attack = build_attack(recipe, victim, mlm=mlm, overrides={"query_budget": budget} if budget else None)
    attack.run(examples[0], 0, 0)  # warm-up: lazy resources (WordNet, USE, tagger) load outside the timing
    victim.clear_cache()
    start = time.perf_counter()
    records = [attack.run(e, i, 0) for i, e in enumerate(examples)]
    wall = time.perf_counter() - start
    s = summarize(records)
    queries = sum(r.queries for r in records)
    return {"mode": mode, "bf16": bf16, "examples": len(examples), "wall_s": round(wall, 2),
            "examples_per_s": round(len(examples) / wall, 3), "queries": queries,
            "queries_per_s": round(queries / wall, 1), "model_rows": victim.total_forward_rows,
            "attack_success_rate": s["attack_success_rate"], "accuracy_under_attack": s["accuracy_under_attack"],
            "avg_num_queries": s["avg_num_queries"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--n", type=int, default=20, help="examples for the fast modes")
    ap.add_argument("--baseline-n", type=int, default=6, help="examples (a prefix) for the slow baselines")
    ap.add_argument("--recipes", nargs="+", default=list(RECIPES))
    ap.add_argument("--baselines", nargs="+", default=["one-at-a-time", "textattack-like"])
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--mlm", default=None)
    ap.add_argument("--query-budget", type=int, default=None, help="same per-example budget in every mode")
    ap.add_argument("--out", default=str(RESULTS))
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    model, tok = load_classifier(resolve_saved_model(args.model)[0])
    model.eval()
    examples = load_examples("sst2", "dev", n=args.n, seed=0)
    base = examples[:args.baseline_n]
    mlm, mlm_note = None, None
    if {"bert-attack", "genetic"} & set(args.recipes):
        try:
            from robustft.models.mlm import load_masked_lm

            mlm = load_masked_lm(args.mlm)
            mlm_note = getattr(mlm[0], "mlm_source", args.mlm)
        except (MissingResource, ImportError) as exc:
            mlm_note = f"unavailable: {exc}"
    out = {"model": args.model, "task": "sst2", "split": "dev", "seed": 0, "threads": args.threads,
           "batch_size": args.batch_size, "query_budget": args.query_budget,
           "cpu": platform.processor() or platform.machine(),
           "cpu_count": os.cpu_count(), "load_avg_start": os.getloadavg(), "mlm": mlm_note, "recipes": {}}
    for recipe in args.recipes:
        if recipe in ("bert-attack", "genetic") and mlm is None:
            out["recipes"][recipe] = {"skipped": mlm_note}
            continue
        run = lambda exs, mode, bf16, r=recipe: measure(r, model, tok, exs, mode, bf16, mlm, args.batch_size,
                                                        args.query_budget)
        row = {"fast_bf16": run(examples, "fast", True), "fast_fp32_subset": run(base, "fast", False),
               "fast_bf16_subset": run(base, "fast", True)}
        for mode in args.baselines:
            row[mode] = run(base, mode, False)  # baselines in fp32: what an unoptimised caller runs
            row[f"speedup_vs_{mode}_fp32"] = round(row[mode]["wall_s"] / row["fast_fp32_subset"]["wall_s"], 2)
            row[f"speedup_vs_{mode}_bf16"] = round(row[mode]["wall_s"] / row["fast_bf16_subset"]["wall_s"], 2)
        out["recipes"][recipe] = row
        print(json.dumps({recipe: row}, indent=1), flush=True)
    out["load_avg_end"] = os.getloadavg()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    print(f"\n{'recipe':12s} {'ex/s':>7s} {'q/s':>8s} {'succ%':>6s} " +
          " ".join(f"{'x vs ' + m + ' fp32/bf16':>32s}" for m in args.baselines))
    for recipe, row in out["recipes"].items():
        if "skipped" in row:
            print(f"{recipe:12s} skipped: {row['skipped']}")
            continue
        f = row["fast_bf16"]
        print(f"{recipe:12s} {f['examples_per_s']:7.2f} {f['queries_per_s']:8.1f} {f['attack_success_rate'] or 0:6.1f} "
              + " ".join(f"{row[f'speedup_vs_{m}_fp32']:25.2f}/{row[f'speedup_vs_{m}_bf16']:<6.2f}"
                         for m in args.baselines))
    print(f"saved {args.out}")


if __name__ == "__main__":
    main()
