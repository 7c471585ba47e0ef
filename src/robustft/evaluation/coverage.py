"""How often the method-difference intervals cover the true difference, by simulation of whole studies.

A synthetic study: S seeds, each scoring methods A and B (correct or not) on the same n test examples. Each
outcome is a threshold on a latent normal: an example's latent value is shared by every seed with weight
`stability` (models agree across seeds on which examples they get right) and A's and B's latents are correlated
(the same examples are hard for both); a seed shifts A's threshold by u ~ N(0, seed_sd^2). The true difference,
over the populations of seeds and examples, is then exact: Phi(t_A / sqrt(1 + seed_sd^2)) - Phi(t_B).

    python -m robustft.evaluation.coverage [--draws 4000] [--old-draws 400]

prints the table in docs/statistics.md: the seed-counting interval (`intervals`), the plain t-interval over
per-seed means, and the two-level percentile bootstrap (`stats.pooled_paired_difference`) it replaces.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import numpy as np
from scipy.stats import norm
from scipy.stats import t as student_t

from robustft.evaluation import stats
from robustft.evaluation.intervals import LEVEL, half_width_from_mean_squares, mean_squares

THRESHOLD_A, THRESHOLD_B = 0.3, 0.1  # accuracies about 62% and 54%
SHARED_DIFFICULTY = 0.7  # correlation of A's and B's latent values on one example
CHUNK = 1000  # studies simulated at once (memory: CHUNK x seeds x n)


@dataclass(frozen=True)
class Regime:
    seeds: int
    seed_sd: float  # sd of a seed's shift of A's latent threshold (0: seeds differ by example noise only)
    stability: float  # share of an example's latent value common to every seed
    n: int = 300

    def truth(self) -> float:
        return float(norm.cdf(THRESHOLD_A / np.sqrt(1 + self.seed_sd**2)) - norm.cdf(THRESHOLD_B))

    def seed_sd_points(self) -> float:
        """The sd over seeds of a seed's true accuracy difference, in points (Gauss-Hermite quadrature)."""
        nodes, weights = np.polynomial.hermite_e.hermegauss(64)
        acc = norm.cdf(THRESHOLD_A + self.seed_sd * nodes)
        weights = weights / weights.sum()
        return float(100 * np.sqrt(max(weights @ acc**2 - (weights @ acc) ** 2, 0.0)))

    def rng(self) -> np.random.Generator:
        """Each regime draws from its own stream, so a test of one regime reproduces the table's row."""
        return np.random.default_rng([self.seeds, round(1000 * self.seed_sd), round(1000 * self.stability), self.n])


# seeds x seed spread (negligible to dominant, where seeds disagree in sign) x example agreement across seeds
REGIMES = tuple(
    Regime(seeds, seed_sd, stability)
    for seeds in (3, 5)
    for stability in (0.3, 0.9)
    for seed_sd in (0.0, 0.1, 0.2, 0.4)
)


def simulate(regime: Regime, draws: int, rng: np.random.Generator) -> np.ndarray:
    """`draws` studies: paired differences (A - B correctness) of shape draws x seeds x n, as int8."""
    s, n, rho, kappa = regime.seeds, regime.n, regime.stability, SHARED_DIFFICULTY
    shared_a = rng.standard_normal((draws, 1, n))
    shared_b = kappa * shared_a + np.sqrt(1 - kappa**2) * rng.standard_normal((draws, 1, n))
    shift = regime.seed_sd * rng.standard_normal((draws, s, 1))
    latent_a = np.sqrt(rho) * shared_a + np.sqrt(1 - rho) * rng.standard_normal((draws, s, n))
    latent_b = np.sqrt(rho) * shared_b + np.sqrt(1 - rho) * rng.standard_normal((draws, s, n))
    return (latent_a < THRESHOLD_A + shift).astype(np.int8) - (latent_b < THRESHOLD_B).astype(np.int8)


def seed_counting_half_widths(d: np.ndarray, level: float = LEVEL) -> np.ndarray:
    """`intervals.paired_difference_over_seeds`'s half-width for each study in d[draw, seed, example]."""
    seeds, n = d.shape[-2:]
    return half_width_from_mean_squares(*mean_squares(d.astype(float)), seeds, n, level)[0]


def plain_t_half_widths(d: np.ndarray, level: float = LEVEL) -> np.ndarray:
    """The t_{S-1} interval over per-seed mean differences alone (misses the examples every seed shares)."""
    seeds = d.shape[-2]
    return student_t.ppf((1 + level) / 2, seeds - 1) * d.mean(axis=-1).std(axis=-1, ddof=1) / np.sqrt(seeds)


def larger_variance_half_widths(d: np.ndarray, level: float = LEVEL) -> np.ndarray:
    """t_{S-1} on max(variance of per-seed means, mean within-seed variance / n) / S: a rule proposed in issue 53,
    kept here to show why it was not taken (it divides the shared example noise by S, and always uses S - 1 df)."""
    seeds, n = d.shape[-2:]
    per_seed = d.mean(axis=-1).var(axis=-1, ddof=1)
    within = d.var(axis=-1, ddof=1).mean(axis=-1) / n
    return student_t.ppf((1 + level) / 2, seeds - 1) * np.sqrt(np.maximum(per_seed, within) / seeds)


def coverage(regime: Regime, draws: int) -> dict:
    """Coverage of the seed-counting interval and the alternatives over `draws` studies, with its median width
    (points) and how often the seeds' observed differences disagree in sign."""
    rng, truth = regime.rng(), regime.truth()
    new_hits = plain_hits = larger_hits = mixed = 0
    widths = []
    for start in range(0, draws, CHUNK):
        d = simulate(regime, min(CHUNK, draws - start), rng)
        mean, per_seed = d.mean(axis=(-2, -1)), d.mean(axis=-1)
        half = seed_counting_half_widths(d)
        new_hits += int(np.sum(np.abs(mean - truth) <= half))
        plain_hits += int(np.sum(np.abs(mean - truth) <= plain_t_half_widths(d)))
        larger_hits += int(np.sum(np.abs(mean - truth) <= larger_variance_half_widths(d.astype(float))))
        mixed += int(np.sum((per_seed.max(axis=-1) > 0) & (per_seed.min(axis=-1) < 0)))
        widths.append(2 * half)
    return {
        "seed_counting": new_hits / draws,
        "plain_t": plain_hits / draws,
        "larger_variance_t": larger_hits / draws,
        "median_width_points": float(100 * np.median(np.concatenate(widths))),
        "seeds_disagree_in_sign": mixed / draws,
    }


def old_bootstrap_coverage(regime: Regime, draws: int, n_boot: int = 1000) -> float:
    """Coverage of `stats.pooled_paired_difference` (one call per study: it is not vectorised)."""
    d, truth = simulate(regime, draws, regime.rng()).astype(float), regime.truth()
    hits = 0
    for i, study in enumerate(d):
        low, high = stats.pooled_paired_difference(study, n_boot=n_boot, seed=i)["ci95"]
        hits += low <= truth <= high
    return hits / draws


def table(draws: int, old_draws: int) -> str:
    rows = [
        "| seeds | example agreement | seed sd (points) | seeds disagree in sign | new interval | plain t "
        "| larger-variance t | old bootstrap | new median width (points) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in REGIMES:
        c = coverage(r, draws)
        old = f"{100 * old_bootstrap_coverage(r, old_draws):.1f}%" if old_draws else "-"
        rows.append(
            f"| {r.seeds} | {r.stability} | {r.seed_sd_points():.1f} | {100 * c['seeds_disagree_in_sign']:.0f}% "
            f"| {100 * c['seed_counting']:.1f}% | {100 * c['plain_t']:.1f}% | {100 * c['larger_variance_t']:.1f}% "
            f"| {old} | {c['median_width_points']:.1f} |"
        )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--draws", type=int, default=4000, help="studies per regime for the vectorised intervals")
    parser.add_argument("--old-draws", type=int, default=400, help="studies per regime for the old bootstrap (slow)")
    args = parser.parse_args(argv)
    print(table(args.draws, args.old_draws))


if __name__ == "__main__":
    main()
