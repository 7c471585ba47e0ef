"""Attack speed of the victim's modes on the same examples: seconds per attacked example, rows forwarded
through the model, and queries in both units.

Modes (all run our own engine: the search, transformation and constraints are identical, only the
victim's model calls differ):
- fast: batched, cached, each batch padded to its longest row (the default victim);
- one-at-a-time: one query per forward pass, no cache (an unoptimised caller);
- pad-to-max-length: batched and cached, but every query padded to the model maximum, which is the
  padding cost TextAttack's HuggingFaceModelWrapper pays (padding="max_length"). It is not TextAttack:
  TextAttack cannot be installed next to transformers 5, so its own overheads are not measured here.
Each mode runs at each requested precision, `--repeats` times, each time with a fresh victim (cold
cache) after a warm-up example outside the measured set, so lazy resources load outside the timing.
In fp32 every mode must return the same records (the JSON says whether they did).

    python benchmarks/attack_speed.py --model minilm --recipe pwws --n 20 --repeats 2 --query-budget 60

Prints a table and saves benchmarks/results/attack_speed.json.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import save  # noqa: E402
from robustft.attacks.recipes import RECIPES, build_attack  # noqa: E402
from robustft.attacks.results import summarize  # noqa: E402
from robustft.attacks.victim import MODES, Victim  # noqa: E402
from robustft.data.tasks import get_task, load_examples  # noqa: E402
from robustft.models.factory import load_classifier  # noqa: E402


def measure(recipe: str, model, tok, examples, warmup, mode: str, precision: str, mlm, batch_size: int,
            budget: int | None) -> tuple[dict, list]:
    victim = Victim(model, tok, "sst2", batch_size=batch_size, precision=precision, mode=MODES[mode])
    attack = build_attack(recipe, victim, mlm=mlm, overrides={"query_budget": budget} if budget else None)
    attack.run(warmup, 0, 0)  # lazy resources (WordNet, USE, tagger) load outside the timing
    victim.clear_cache()
    start = time.perf_counter()
    records = [attack.run(e, i, 0) for i, e in enumerate(examples)]
    wall = time.perf_counter() - start
    s = summarize(records)
    attacked = s["num_succeeded"] + s["num_failed"]
    return {"mode": mode, "precision": precision, "examples": len(examples), "attacked": attacked,
            "wall_s": round(wall, 2), "s_per_example": round(wall / len(examples), 3),
            "s_per_attacked_example": round(wall / attacked, 3) if attacked else None,
            "rows_forwarded": victim.total_forward_rows,
            "queries_textattack": sum(r.queries for r in records),
            "queries_distinct": sum(r.distinct_queries for r in records),
            "avg_num_queries": s["avg_num_queries"], "avg_num_distinct_queries": s["avg_num_distinct_queries"],
            "attack_success_rate": s["attack_success_rate"],
            "accuracy_under_attack": s["accuracy_under_attack"]}, records


def precision_probe(model, tok, lengths: list[int], batch_sizes: list[int]) -> list[dict]:
    """Forward time per row in fp32 and bf16 autocast for batches of each length: the first call at a
    length (a shape the CPU kernels have not seen) and the mean of two more calls at the same shape.

    Dynamic padding gives nearly every batch of an attack a new sequence length; if a precision pays a
    per-shape set-up cost, it shows as first-call time well above the warm time."""
    rows = []
    for precision in ("fp32", "bf16"):
        for batch in batch_sizes:
            first, warm = 0.0, 0.0
            for length in lengths:
                ids = torch.full((batch, length), tok.convert_tokens_to_ids("the"))
                inputs = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
                with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16"):
                    start = time.perf_counter()
                    model(**inputs)
                    first += time.perf_counter() - start
                    start = time.perf_counter()
                    model(**inputs)
                    model(**inputs)
                    warm += (time.perf_counter() - start) / 2
            n = batch * len(lengths)
            rows.append({"precision": precision, "batch_size": batch, "lengths": f"{lengths[0]}..{lengths[-1]}",
                         "first_call_ms_per_row": round(1000 * first / n, 3),
                         "warm_call_ms_per_row": round(1000 * warm / n, 3)})
            print(rows[-1], flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="minilm", help="run folder, model folder or alias (minilm: random head)")
    ap.add_argument("--recipe", default="pwws", choices=sorted(set(RECIPES) - {"ascc"}))
    ap.add_argument("--n", type=int, default=20, help="examples per mode (SST-2 dev, seeded)")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES))
    ap.add_argument("--precisions", nargs="+", default=["fp32", "bf16"], help="for the fast mode")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--mlm", default=None)
    ap.add_argument("--query-budget", type=int, default=None, help="same per-example budget (TextAttack unit)")
    ap.add_argument("--name", default="attack_speed", help="results/<name>.json")
    ap.add_argument("--precision-probe", action="store_true",
                    help="instead of attacks: forward time per row in fp32 and bf16 over many distinct lengths")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    from robustft.evaluate.command import resolve_saved_model

    torch.manual_seed(0)  # an alias such as minilm gets a freshly initialised head: the same one every run
    model, tok = load_classifier(resolve_saved_model(args.model)[0], label_names=get_task("sst2").label_names)
    model.eval()
    if args.precision_probe:
        rows = precision_probe(model, tok, list(range(12, 60, 4)), [1, 16, 64])
        save(args.name, {"command": "python benchmarks/" + Path(__file__).name + " " + " ".join(sys.argv[1:]),
                         "model": args.model, "threads": args.threads, "precision_probe": rows})
        return
    examples = load_examples("sst2", "dev", n=args.n + 1, seed=0)
    warmup, examples = examples[0], examples[1:]
    mlm = None
    if args.recipe in ("bert-attack", "genetic"):
        from robustft.models.mlm import load_masked_lm

        mlm = load_masked_lm(args.mlm)
    runs, outputs = [], {}
    for repeat in range(args.repeats):
        for mode in args.modes:
            for precision in (args.precisions if mode == "fast" else ["fp32"]):
                row, records = measure(args.recipe, model, tok, examples, warmup, mode, precision, mlm,
                                       args.batch_size, args.query_budget)
                row["repeat"] = repeat
                runs.append(row)
                outputs[(mode, precision)] = [(r.result, r.adversarial, r.queries) for r in records]
                print(f"{mode:18s} {precision:5s} rep {repeat}: {row['s_per_attacked_example']} s/attacked ex, "
                      f"{row['rows_forwarded']} rows, queries {row['queries_textattack']} (TextAttack) / "
                      f"{row['queries_distinct']} (distinct)", flush=True)
    fp32 = [v for (mode, p), v in outputs.items() if p == "fp32"]
    save(args.name, {"command": "python benchmarks/" + Path(__file__).name + " " + " ".join(sys.argv[1:]),
                     "model": args.model, "recipe": args.recipe, "task": "sst2", "split": "dev", "seed": 0,
                     "batch_size": args.batch_size, "query_budget": args.query_budget,
                     "query_budget_unit": "textattack", "fp32_modes_same_records": all(v == fp32[0] for v in fp32),
                     "runs": runs})


if __name__ == "__main__":
    main()
