"""The floors `attack_speed.py` holds attacks to (the victim's batches replayed; the distinct rows ideally batched),
and per-recipe summaries of its runs: where each recipe stands against its floors and (with `--profile`) where its
time goes. One JSON per recipe, with the repeats, threads, precision and load average it was measured under."""

from __future__ import annotations

import cProfile
import pstats
import statistics
from collections import defaultdict

from common import forward_seconds, length_grouped

TARGET_X_IDEAL_FLOOR = 1.2  # issue 66: every recipe within 1.2x its ideal floor at two threads, bf16


def recipe_summary(rows: list[dict]) -> list[dict]:
    """Per (precision, variant, examples at once): the median over repeats of the attack's wall time, its floor as
    called and its ideal floor (per example where timed, else the whole set's), and their ratios."""
    groups = defaultdict(list)
    for r in rows:
        if r["mode"] == "fast":
            groups[(r["precision"], r["variant"], r["concurrent_examples"])].append(r)
    out = []

    def med(runs: list[dict], key: str) -> float:
        return round(statistics.median(r[key] for r in runs), 3)

    for (precision, variant, concurrent), runs in sorted(groups.items()):
        ideal_key = "floor_ideal_s" if "floor_ideal_s" in runs[0] else "floor_ideal_set_s"
        ratios = [r["wall_s"] / r[ideal_key] for r in runs]
        out.append(
            {
                "precision": precision,
                "variant": variant,
                "concurrent_examples": concurrent,
                "repeats": len(runs),
                "attack_s": med(runs, "wall_s"),
                "floor_as_called_s": med(runs, "floor_as_called_s"),
                "ideal_floor_s": med(runs, ideal_key),
                "ideal_floor_kind": "per example" if ideal_key == "floor_ideal_s" else "whole set",
                "x_floor_as_called": [r["x_floor_as_called"] for r in runs],
                "x_ideal_floor": [round(x, 2) for x in ratios],
                f"within_{TARGET_X_IDEAL_FLOOR}x_ideal_floor_every_repeat": all(
                    x <= TARGET_X_IDEAL_FLOOR for x in ratios
                ),
            }
        )
    return out


class Profiler:
    """cProfile switched on around the attack of each timed run of a recipe (not its warm-up nor its floors);
    `top(recipe)`: its most expensive functions by own time (profiling slows Python code, not the model: read
    shares, not seconds)."""

    def __init__(self, enabled: bool):
        self.enabled, self.profiles = enabled, {}

    def runner(self, recipe: str):
        """`runner(recipe)(fn, *args)`: fn(*args), profiled into the recipe's profile when profiling is on."""
        if not self.enabled:
            return lambda fn, *args: fn(*args)
        return self.profiles.setdefault(recipe, cProfile.Profile()).runcall

    def top(self, recipe: str, n: int = 15) -> list[dict] | None:
        if recipe not in self.profiles:
            return None
        stats = pstats.Stats(self.profiles[recipe])
        total = sum(v[2] for v in stats.stats.values())
        rows = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])[:n]
        return [
            {
                "function": f"{file.split('site-packages/')[-1]}:{line}({name})",
                "own_s": round(own, 3),
                "own_share": round(own / total, 3),
                "cumulative_s": round(cum, 3),
                "calls": calls,
            }
            for (file, line, name), (_, calls, own, cum, _) in rows
        ]


def ideal_floor(model, tok, rows, victim, batch_size: int, pad_multiple) -> tuple[float, float]:
    """Seconds of each precision's distinct `rows` batched ideally, and how many of them the fp32 re-checks of a
    reduced-precision attack take (required forwards: deduplicated with their bf16 row they would vanish)."""
    by_precision = defaultdict(list)
    for key, row_precision in dict.fromkeys(rows):
        by_precision[row_precision].append(key)
    total = recheck = 0.0
    for row_precision, keys in by_precision.items():
        batches = length_grouped(tok, keys, batch_size, victim.max_length, pad_multiple)
        seconds = forward_seconds(model, batches, row_precision)
        total += seconds
        recheck += seconds if row_precision != victim.precision else 0.0
    return total, recheck


def forward_seconds_by_precision(model, batches: list[tuple[dict, str]]) -> float:
    total, i = 0.0, 0
    while i < len(batches):  # consecutive runs of one precision (the fp32 re-checks interleave with bf16)
        j = i
        while j < len(batches) and batches[j][1] == batches[i][1]:
            j += 1
        total += forward_seconds(model, [b for b, _ in batches[i:j]], batches[i][1])
        i = j
    return total
