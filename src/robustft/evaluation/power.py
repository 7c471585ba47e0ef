"""What would settle an inconclusive comparison, stated in seeds and examples from the observed spreads.

The interval's half-width is projected to other designs from the variance components of the observed table
(`intervals.Spread`): seed / S + example / n + residual / (n S), with the same degrees of freedom rule as the
interval. More examples per seed shrink only the example parts, so where the seeds' spread dominates no number of
examples settles the question (the answer is None: more seeds are needed); more seeds shrink everything but the
part every seed shares, the noise of the fixed test examples (None there: more examples are needed).
"""

from __future__ import annotations

import math

from scipy.stats import t as student_t

from robustft.evaluation.intervals import LEVEL, MAX_EXAMPLES, MAX_SEEDS, Spread, half_width


def projected_half_width(spread: Spread, seeds: int, n: int, level: float = LEVEL) -> float:
    """The half-width an interval over `seeds` seeds of `n` paired examples would have if these spreads held."""
    return half_width(spread, seeds, n, level)[0]


def seeds_needed(spread: Spread, n: int, target: float, level: float = LEVEL, max_seeds: int = MAX_SEEDS):
    """The fewest seeds (2 or more) of `n` examples whose interval's half-width falls below `target`; None when even
    `max_seeds` would not (the shared example noise is too large at n: more examples are needed)."""
    if target <= 0:
        return None
    return next((s for s in range(2, max_seeds + 1) if projected_half_width(spread, s, n, level) < target), None)


def seeds_alone_half_width(spread: Spread, seeds: int, level: float = LEVEL) -> float:
    """The half-width left with unlimited examples per seed: the seeds' spread alone, on S - 1 degrees of freedom."""
    return float(student_t.ppf((1 + level) / 2, seeds - 1) * math.sqrt(spread.seed / seeds))


def examples_needed(spread: Spread, seeds: int, target: float, level: float = LEVEL, max_examples: int = MAX_EXAMPLES):
    """The fewest paired examples per seed whose interval's half-width (at `seeds` seeds) falls below `target`; None
    when the seeds' spread alone keeps it above (more examples cannot settle it: more seeds are needed)."""
    if target <= 0 or seeds_alone_half_width(spread, seeds, level) >= target:
        return None
    high = 2
    while projected_half_width(spread, seeds, high, level) >= target:
        if high >= max_examples:
            return None
        high = min(2 * high, max_examples)
    low = high // 2  # the half-width at `low` is still too wide (or low is below the smallest table)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if projected_half_width(spread, seeds, middle, level) < target else (middle, high)
    return high


def _points(x: float) -> str:
    return f"{100 * x:+.1f}"


def what_would_settle(result: dict, claimed: float | None = None, level: float = LEVEL) -> dict:
    """For an interval from `intervals.paired_difference_over_seeds` (A - B, the claim oriented so it is positive):
    the seeds and examples that would make the interval exclude 0, or rule out the `claimed` size, if the observed
    mean and spreads held (whichever needs the wider half-width, so the easier of the two). Keys: aim ("0" or the
    claimed size), half_width_needed, seeds (at the current examples; None: more seeds would not do),
    examples_per_seed (at the current seeds; None: more examples would not do), seeds_alone_half_width, sentence."""
    if result.get("spread") is None:
        if result.get("n_seeds", 0) < 2:
            return {"aim": None, "sentence": "one seed: train more seeds before any seed-level question is settled"}
        return {"aim": None, "sentence": "more seeds or examples would narrow it (no variance components to project)"}
    mean, seeds, n = result["difference"], result["n_seeds"], result["n"]
    spread = Spread(**result["spread"])
    aim, target = "0", abs(mean)
    if claimed is not None and claimed - mean > target:
        aim, target = _points(claimed), claimed - mean
    found = {
        "aim": aim,
        "half_width_needed": target,
        "seeds": seeds_needed(spread, n, target, level),
        "examples_per_seed": examples_needed(spread, seeds, target, level),
        "seeds_alone_half_width": seeds_alone_half_width(spread, seeds, level),
        "both": None,
    }
    if found["seeds"] is None and found["examples_per_seed"] is None:
        found["both"] = both_needed(spread, target, level)
    return {**found, "sentence": _sentence(found, mean, seeds, n)}


def both_needed(spread: Spread, target: float, level: float = LEVEL, max_seeds: int = MAX_SEEDS):
    """When neither more seeds nor more examples settle it alone: the fewest seeds that could with enough examples,
    and the examples per seed they need, as (seeds, examples); None beyond `max_seeds`."""
    for s in range(2, max_seeds + 1):
        if seeds_alone_half_width(spread, s, level) < target:
            n = examples_needed(spread, s, target, level)
            if n is not None:
                return s, n
    return None


def _sentence(found: dict, mean: float, seeds: int, n: int) -> str:
    if found["half_width_needed"] <= 0:
        return "the observed difference is 0: no number of seeds or examples would exclude 0"
    goal = "excluding 0" if found["aim"] == "0" else f"ruling out the paper's {found['aim']}"
    by_seeds = (
        f"about {found['seeds']} seeds of {n:,} examples"
        if found["seeds"] is not None
        else f"more than {MAX_SEEDS} seeds at {n:,} examples (the test examples' shared noise is too large)"
    )
    by_examples = (
        f"about {found['examples_per_seed']:,} paired examples per seed at {seeds} seeds"
        if found["examples_per_seed"] is not None
        else (
            f"no number of examples at {seeds} seeds: the seeds' spread alone leaves "
            f"±{100 * found['seeds_alone_half_width']:.1f} points, so more seeds are needed"
        )
    )
    start = f"if the observed {_points(mean)} and spreads held, {goal} would take"
    if found["both"] is not None:
        s, m = found["both"]
        return f"{start} more seeds and more examples together: about {s} seeds of {m:,} paired examples each"
    if found["seeds"] is None and found["examples_per_seed"] is None:
        return f"{start} more than {MAX_SEEDS} seeds however many examples each"
    return f"{start} {by_seeds}, or {by_examples}"
