"""Attack speed against its forward floor: seconds per attacked example, where they go, and the raw model
time of the very same inputs, all measured in one process, interleaved, each repeated.

For every (recipe, mode, precision) and repeat, a fresh victim attacks the same seeded SST-2 dev examples
(after a warm-up example outside the set, so lazy resources load outside the timing); right after each
example, on the same model and precision, two floors of that example's inputs are timed:
- floor_as_called: the victim's own batches (same rows, same batch composition, same lengths and padding),
  already tokenised, through the model with nothing around it. attack / floor_as_called is the Python,
  tokenisation and constraint overhead the engine adds;
- floor_ideal: the example's distinct forwarded rows, length-grouped into batches of `--batch-size`,
  padded to the longest: the issue's floor (what the forwards alone would cost with perfect batching), per
  precision: a bf16 attack's fp32 re-checks of its successes are forwards it must make, so they are timed in
  fp32 (`floor_ideal_fp32_rechecks_s` says how much of the floor they are).
Breakdown of the attack's wall time: model (forward hooks on the victim), victim (tokenise + model +
softmax), transformation, each constraint (POS tagger, sentence encoder, LM filter: their own models
included) and the LM filter's scorer alone; 'other' is the rest (search, bookkeeping).

Victim modes (our own engine; only the victim's model calls differ): fast (batched, cached, padded to each
batch's longest), one-at-a-time (no batching, no cache), pad-to-max-length (TextAttack's padding cost).
In fp32 every mode must return the same records (the JSON says whether they did).

`--concurrent N`: N examples attacked at once, sharing every model call (robustft.attacks.lockstep). The rows of
one example can then not be told apart in the shared batches, so every run (one at a time too) is also held
against the whole set's floor: all distinct rows of the run, length-grouped into batches of `--batch-size`,
timed right after the run (`x_floor_ideal_set`); the per-example floors are timed for one-at-a-time runs only.

    nice -n 10 python benchmarks/attack_speed.py --model RUN --recipes pwws textfooler --n 20 --repeats 2
    python benchmarks/attack_speed.py --precision-probe [--pad-multiple 8]

Prints a table and saves benchmarks/results/<name>.json with the load average before and after; `--per-recipe`:
one <name>_<recipe>.json per recipe instead, with a summary of its floors (attack_floor.py); `--profile`: with each
recipe's top costs under cProfile (a profiled run's times are not timings).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from attack_floor import Profiler, forward_seconds_by_precision, ideal_floor, recipe_summary  # noqa: E402
from common import load_average, load_sst2_victim, save  # noqa: E402
from robustft.attacks.constraints.similarity import CachedEncoder  # noqa: E402
from robustft.attacks.example_loop import attack_each  # noqa: E402
from robustft.attacks.recipes import RECIPES, build_attack  # noqa: E402
from robustft.attacks.results import summarize  # noqa: E402
from robustft.attacks.victim import MODES, Victim  # noqa: E402
from robustft.data.tasks import load_examples  # noqa: E402


class Recorder:
    """Wraps one victim and attack (instance attributes only) to keep the batches the victim forwarded and
    the seconds spent in the model, the victim, the transformation, each constraint and the LM scorer."""

    def __init__(self, victim: Victim, attack):
        self.batches: list[tuple[dict, str]] = []  # (tokenised batch, precision it ran in)
        self.rows: list[tuple[tuple[str, str | None], str]] = []  # (input, precision it ran in)
        self.seconds: dict[str, float] = defaultdict(float)
        self.lm_items = 0
        self.batches_total = 0
        self.paused = False
        self._precision = victim.precision
        self._started: float | None = None
        forward, padded = victim._forward, victim._padded

        def timed_forward(keys, precision=None):
            self._precision = precision or victim.precision
            self.rows += [(key, self._precision) for key in keys]
            return self._timed("victim", forward, keys, precision)

        def recording_padded(rows):
            enc = padded(rows)
            self.batches.append((dict(enc), self._precision))
            return enc

        victim._forward, victim._padded = timed_forward, recording_padded
        self.hooks = [
            victim.model.register_forward_pre_hook(self._model_start),
            victim.model.register_forward_hook(self._model_end),
        ]
        transformation = attack.transformation
        transformation.candidates = self._wrap("transformation", transformation.candidates)
        for n, c in enumerate(attack.constraints):
            c.filter = self._wrap(f"constraint:{n}:{c.name}", c.filter)
            scorer = getattr(c, "scorer", None)
            if scorer is not None and hasattr(scorer, "score"):
                score = scorer.score

                def counted(items, score=score):
                    self.lm_items += len(items)  # windows (pll) or swapped words in their window (word) not cached
                    return self._timed("lm_scorer", score, items)

                scorer.score = counted

    def _timed(self, name, fn, *args):
        start = time.perf_counter()
        try:
            return fn(*args)
        finally:
            self.seconds[name] += time.perf_counter() - start

    def _wrap(self, name, fn):
        return lambda *args: self._timed(name, fn, *args)

    def _model_start(self, module, args):
        self._started = time.perf_counter()

    def _model_end(self, module, args, output):
        if not self.paused:  # the floors run the same model: not the attack's time
            self.seconds["model"] += time.perf_counter() - self._started

    def close(self):
        for h in self.hooks:
            h.remove()


def records_digest(records) -> str:
    """What must not change with a speed change: result, adversarial text, prediction, queries in both units."""
    rows = [(r.result, r.adversarial, r.adversarial_pred, r.queries, r.distinct_queries) for r in records]
    return hashlib.sha256(json.dumps(rows).encode()).hexdigest()[:16]


def per_position_best_scores(ctx, indices):
    """PWWS before the change (the baseline of `--variants per-position`): one victim request per position."""
    goal, best = ctx.goal, np.full(len(indices), np.nan)
    neighbours = ctx.neighbours(ctx.original, indices)
    for n, i in enumerate(indices):
        if neighbours[i] and not goal.search_over:
            results = goal.evaluate(neighbours[i])
            if results:
                best[n] = max(r.score for r in results)
    return best


def measure(
    recipe: str,
    model,
    tok,
    examples,
    warmup,
    mode: str,
    precision: str,
    mlm,
    args,
    pad_multiple: int | None,
    variant: str = "current",
    concurrent: int = 1,
    wait=None,
    indices: list[int] | None = None,
    profiled=lambda fn, *a: fn(*a),
) -> tuple[dict, list, list]:
    """One timed run: its row, its records and the whole set's distinct forwarded rows. `wait()`, when given, is
    called after the warm-up and again before the set's floor (processes timed together meet there); `indices`
    are the examples' places in the whole set (a process's share of it), which seed their attacks."""
    victim = Victim(
        model,
        tok,
        "sst2",
        batch_size=args.batch_size,
        precision=precision,
        mode=MODES[mode],
        pad_to_multiple_of=pad_multiple,
    )
    overrides = {"query_budget": args.query_budget} if args.query_budget else {}
    if variant == "lm-word":
        overrides["lm_scorer"] = "masked-lm-word"
    if variant == "lm-bf16":
        overrides["lm_precision"] = "bf16"
    attack = build_attack(recipe, victim, mlm=mlm, overrides=overrides or None)
    if variant == "per-position":
        attack.search._best_scores = per_position_best_scores
    if variant == "bf16-all-threads":
        victim.bf16_one_thread_below = 0
    if variant == "no-padding-split":
        victim.split_for_padding = False
    if variant == "compile":
        victim.compile_model = True
    if variant == "use-numpy":  # the sentence encoder's numpy forward (the package's), as before the torch port
        from robustft.attacks.constraints.similarity import USEEncoder

        for c in attack.constraints:
            if isinstance(getattr(c, "encoder", None), CachedEncoder) and c.encoder_name == "use":
                c.encoder = CachedEncoder(USEEncoder(backend="numpy"))
    attack.run(warmup, 0, 0)  # lazy resources (WordNet, USE, tagger) load outside the timing
    victim.clear_cache()
    for c in attack.constraints:  # the sentence encoder's cache is shared by the process: every run starts cold
        if isinstance(getattr(c, "encoder", None), CachedEncoder):
            c.encoder(["the encoder loads its weights on first use"])  # a short warm-up text skips the window
            c.encoder.cache.clear()
    recorder = Recorder(victim, attack)
    if wait is not None:
        wait()
    records, wall, as_called, ideal, recheck, set_rows = [], 0.0, 0.0, 0.0, 0.0, []
    whole_set = concurrent > 1 or wait is not None  # timed as one run: the per-example floors would interleave
    if whole_set:
        todo = list(zip(indices or range(len(examples)), examples, strict=True))
        start = time.perf_counter()
        profiled(attack_each, attack, todo, 0, records.append, concurrent)
        wall = time.perf_counter() - start
        records.sort(key=lambda r: r.index)
        set_rows = list(recorder.rows)
    for i, e in enumerate([] if whole_set else examples):
        start = time.perf_counter()
        records.append(profiled(attack.run, e, i, 0))
        wall += time.perf_counter() - start
        if mode == "fast":
            set_rows += recorder.rows
            # The floors right after each example, on the same model and precision: the attack and its floor
            # see the same load, which on a shared machine changes from one second to the next.
            recorder.paused = True
            as_called += forward_seconds_by_precision(model, recorder.batches)
            ideal_s, recheck_s = ideal_floor(model, tok, recorder.rows, victim, args.batch_size, pad_multiple)
            ideal, recheck = ideal + ideal_s, recheck + recheck_s
            recorder.batches_total += len(recorder.batches)
            recorder.batches, recorder.rows, recorder.paused = [], [], False
    set_floor = None
    if mode == "fast":
        recorder.paused = True
        if wait is not None:
            wait()  # the set's floor first, right after the meeting: processes time theirs at the same moment
        set_floor = ideal_floor(model, tok, set_rows, victim, args.batch_size, pad_multiple)[0]
        if whole_set:
            as_called = forward_seconds_by_precision(model, recorder.batches)
    recorder.close()
    s = summarize(records)
    attacked = s["num_succeeded"] + s["num_failed"]
    row = {
        "recipe": recipe,
        "variant": variant,
        "concurrent_examples": concurrent,
        "mode": mode,
        "precision": precision,
        "pad_multiple": pad_multiple,
        "examples": len(examples),
        "attacked": attacked,
        "wall_s": round(wall, 3),
        "s_per_attacked_example": round(wall / attacked, 3) if attacked else None,
        "rows_forwarded": victim.total_forward_rows,
        "forward_calls": recorder.batches_total + len(recorder.batches),
        "queries_textattack": sum(r.queries for r in records),
        "queries_distinct": sum(r.distinct_queries for r in records),
        "attack_success_rate": s["attack_success_rate"],
        "accuracy_under_attack": s["accuracy_under_attack"],
        "records_digest": records_digest(records),
        "results": [r.result for r in records],  # per example, for paired comparisons of variants
    }
    secs = dict(recorder.seconds)
    accounted = secs.get("victim", 0.0) + sum(
        v for k, v in secs.items() if k.startswith(("transformation", "constraint"))
    )
    row["seconds"] = {k: round(v, 3) for k, v in sorted(secs.items())}
    row["seconds"]["other"] = round(wall - accounted, 3)
    if recorder.lm_items:
        row["lm_scorer_items_scored"] = recorder.lm_items
    if mode == "fast":
        row.update(
            {
                "floor_as_called_s": round(as_called, 3),
                "x_floor_as_called": round(wall / as_called, 2),
                "floor_ideal_set_s": round(set_floor, 3),
                "x_floor_ideal_set": round(wall / set_floor, 2),
            }
        )
    if mode == "fast" and not whole_set:
        row.update(
            {
                "floor_ideal_s": round(ideal, 3),
                "floor_ideal_fp32_rechecks_s": round(recheck, 3),
                "x_floor_ideal": round(wall / ideal, 2),
                "model_x_floor_ideal": round(secs.get("model", 0.0) / ideal, 2),
            }
        )
        if "lm_scorer" in secs:
            row["lm_scorer_x_victim_model"] = round(secs["lm_scorer"] / max(secs.get("model", 0.0), 1e-9), 2)
    return row, records, set_rows


def precision_probe(model, tok, lengths: list[int], batch_sizes: list[int], pad_multiple: int | None) -> list[dict]:
    """Forward time per row in fp32 and bf16 autocast for batches of each length: the first call at a
    length (a shape the CPU kernels have not seen) and the mean of two more calls at the same shape.

    Dynamic padding gives nearly every batch of an attack a new sequence length; if a precision pays a
    per-shape set-up cost, it shows as first-call time well above the warm time. With `pad_multiple`,
    lengths are rounded up to it first (the victim's bucketing), so fewer distinct shapes occur."""
    rows = []
    for precision in ("fp32", "bf16"):
        for batch in batch_sizes:
            first, warm = 0.0, 0.0
            for length in lengths:
                if pad_multiple:
                    length = -(-length // pad_multiple) * pad_multiple
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
            rows.append(
                {
                    "precision": precision,
                    "batch_size": batch,
                    "lengths": f"{lengths[0]}..{lengths[-1]}",
                    "pad_multiple": pad_multiple,
                    "first_call_ms_per_row": round(1000 * first / n, 3),
                    "warm_call_ms_per_row": round(1000 * warm / n, 3),
                }
            )
            print(rows[-1], flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="minilm", help="run folder, model folder or alias (minilm: random head)")
    ap.add_argument("--recipes", "--recipe", nargs="+", default=["pwws"], choices=sorted(set(RECIPES) - {"ascc"}))
    ap.add_argument("--n", type=int, default=20, help="examples per mode (SST-2 dev, seeded)")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--modes", nargs="+", default=["fast"], choices=list(MODES))
    ap.add_argument("--precisions", nargs="+", default=["fp32", "bf16"], help="for the fast mode")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument(
        "--pad-multiples",
        type=int,
        nargs="+",
        default=[0],
        help="victim pads lengths to a multiple of each (0: to the batch's longest only)",
    )
    ap.add_argument(
        "--variants",
        nargs="+",
        default=["current"],
        choices=[
            "current",
            "per-position",
            "lm-word",
            "lm-bf16",
            "bf16-all-threads",
            "no-padding-split",
            "compile",
            "use-numpy",
        ],
        help="per-position: PWWS scoring one position per victim request (the code before batching); lm-word: "
        "the genetic attack's LM filter scoring the swapped word instead of the window's pseudo-log-likelihood; "
        "lm-bf16: the genetic attack's masked LM in bf16; "
        "bf16-all-threads: small bf16 victim calls keep every thread (the code before one-thread small calls); "
        "no-padding-split: the victim's rows in plain chunks of --batch-size, never split by length for padding; "
        "compile: the victim's reduced-precision calls through torch.compile (compiled during the warm-up example); "
        "use-numpy: the USE stand-in's numpy forward (the package's) instead of our torch port",
    )
    ap.add_argument(
        "--threads",
        type=int,
        nargs="+",
        default=[1],
        help="torch threads (attacks: the first; the precision probe: each, interleaved)",
    )
    ap.add_argument(
        "--concurrent", type=int, nargs="+", default=[1], help="examples attacked at once, sharing model calls (each)"
    )
    ap.add_argument("--mlm", default=None)
    ap.add_argument("--query-budget", type=int, default=None, help="same per-example budget (TextAttack unit)")
    ap.add_argument("--name", default="attack_speed", help="results/<name>.json")
    ap.add_argument(
        "--per-recipe", action="store_true", help="results/<name>_<recipe>.json per recipe, with its floors"
    )
    ap.add_argument("--profile", action="store_true", help="cProfile each recipe's runs (top costs per recipe)")
    ap.add_argument("--probe-batches", type=int, nargs="+", default=[1, 16, 64], help="batch sizes of the probe")
    ap.add_argument(
        "--precision-probe",
        action="store_true",
        help="instead of attacks: forward time per row in fp32 and bf16 over many distinct lengths",
    )
    args = ap.parse_args()
    torch.set_num_threads(args.threads[0])
    load_before = load_average()
    command = "python benchmarks/" + Path(__file__).name + " " + " ".join(sys.argv[1:])
    model, tok = load_sst2_victim(args.model)
    if args.precision_probe:
        rows = []
        for repeat in range(args.repeats):
            for threads in args.threads:
                torch.set_num_threads(threads)
                for m in args.pad_multiples:
                    probe = precision_probe(model, tok, list(range(12 + repeat, 60, 4)), args.probe_batches, m or None)
                    rows += [{**r, "threads": threads, "repeat": repeat} for r in probe]
        save(
            args.name,
            {
                "command": command,
                "model": args.model,
                "threads": args.threads,
                "load_average_before": load_before,
                "load_average_after": load_average(),
                "precision_probe": rows,
            },
        )
        return
    examples = load_examples("sst2", "dev", n=args.n + 1, seed=0)
    warmup, examples = examples[0], examples[1:]
    mlm = None
    if {"bert-attack", "genetic", "bae"} & set(args.recipes):
        from robustft.models.mlm import load_masked_lm

        mlm = load_masked_lm(args.mlm)
    runs, digests, profiler = [], defaultdict(set), Profiler(args.profile)
    for repeat in range(args.repeats):
        for recipe in args.recipes:
            for mode in args.modes:
                for precision in args.precisions if mode == "fast" else ["fp32"]:
                    for multiple, variant, concurrent in [
                        (m, v, c) for m in args.pad_multiples for v in args.variants for c in args.concurrent
                    ]:
                        if concurrent > 1 and mode != "fast":
                            continue
                        row, records, _ = measure(
                            recipe,
                            model,
                            tok,
                            examples,
                            warmup,
                            mode,
                            precision,
                            mlm,
                            args,
                            multiple or None,
                            variant,
                            concurrent,
                            profiled=profiler.runner(recipe),
                        )
                        row["repeat"] = repeat
                        runs.append(row)
                        lm_variant = variant if variant.startswith("lm-") else ""  # other variants keep the records
                        digests[(recipe, precision, lm_variant)].add(row["records_digest"])
                        floor = (
                            f", {row.get('x_floor_ideal', '-')}x ideal floor, {row['x_floor_ideal_set']}x the set's, "
                            f"{row['x_floor_as_called']}x as called"
                            if mode == "fast"
                            else ""
                        )
                        print(
                            f"{recipe:11s} {variant:12s} x{concurrent} {mode:5s} {precision:5s} pad {multiple:2d} "
                            f"rep {repeat}: "
                            f"{row['s_per_attacked_example']} s/attacked ex{floor}, {row['rows_forwarded']} rows, "
                            f"{row['seconds']}",
                            flush=True,
                        )
    common = {
        "command": command,
        "model": args.model,
        "task": "sst2",
        "split": "dev",
        "seed": 0,
        "threads": args.threads[0],
        "repeats": args.repeats,
        "batch_size": args.batch_size,
        "pad_multiples": args.pad_multiples,
        "query_budget": args.query_budget,
        "query_budget_unit": "textattack",
        "load_average_before": load_before,
        "load_average_after": load_average(),
        "same_records_across_modes_and_repeats": {
            f"{r}/{p}{'/' + w if w else ''}": len(d) == 1 for (r, p, w), d in digests.items()
        },
    }
    if not args.per_recipe:
        save(args.name, {**common, "recipes": args.recipes, "runs": runs})
    for recipe in args.recipes if args.per_recipe else []:
        mine = [r for r in runs if r["recipe"] == recipe]
        extra = {"profile_top_own_time": profiler.top(recipe)} if args.profile else {}
        save(
            f"{args.name}_{recipe}",
            {**common, "recipe": recipe, "summary": recipe_summary(mine), **extra, "runs": mine},
        )


if __name__ == "__main__":
    main()
