"""Discrete particle swarm search (Zang et al., ACL 2020), as TextAttack 0.3.11's ParticleSwarmOptimization and the
authors' code (thunlp/SememePSO-Attack) run it.

Each particle is a text. Its velocity holds one number per word; per iteration t of T:
  omega = (0.8 - 0.2) (T - t) / T + 0.2, v <- omega v + (1 - omega) (eq(x, local elite) + eq(x, global elite)),
  eq(a, b) = -v_max where the words agree, +v_max where they differ (v_max = 3);
then with probability C1 = 0.8 - 0.6 t/T the particle turns towards its local elite, with C2 = 0.2 + 0.6 t/T
towards the global elite: the elite's text takes the particle's word at each position with probability sigmoid(v)
(TextAttack's `_turn(elite, particle)`), redrawn up to 20 times until the constraints pass, else the elite stays.
The swarm is evaluated in one batch; then each particle mutates with probability 1 - 2 x (share of words changed):
one position, drawn in proportion to the score gain of its best substitute, takes that substitute. Elites follow
the best scores; the search stops at the first success. Every draw comes from the example's seeded generator.
"""

from __future__ import annotations

import math

import numpy as np

from robustft.attacks.attack import AttackContext, Search
from robustft.attacks.goal import GoalResult
from robustft.attacks.words import AttackedText


def velocity_step(velocity, words, local_words, global_words, omega: float, v_max: float) -> np.ndarray:
    """One particle's new velocity: omega v + (1 - omega) (eq(x, local) + eq(x, global)), per word."""
    triples = zip(words, local_words, global_words, strict=True)
    pull = [(-v_max if a == b else v_max) + (-v_max if a == g else v_max) for a, b, g in triples]
    return omega * np.asarray(velocity, dtype=np.float64) + (1.0 - omega) * np.asarray(pull)


def schedule(t: int, iterations: int, omega=(0.8, 0.2), c=(0.8, 0.2)) -> tuple[float, float, float]:
    """(inertia omega, C1 = P(turn to the local elite), C2 = P(turn to the global elite)) at iteration t, linear."""
    frac = t / iterations
    return (omega[0] - omega[1]) * (1 - frac) + omega[1], c[0] - frac * (c[0] - c[1]), c[1] + frac * (c[0] - c[1])


def turn_words(source: tuple[str, ...], target: tuple[str, ...], probs, draws) -> dict[int, str]:
    """The positions where `source` takes `target`'s word: draws[i] < probs[i] and the words differ."""
    return {i: target[i] for i, (u, p) in enumerate(zip(draws, probs, strict=True)) if u < p and source[i] != target[i]}


def gain_weights(gains: list[float]) -> list[float]:
    """Mutation weights: negative gains count 0; all zero: every position alike (TextAttack's `normalize`)."""
    kept = [max(g, 0.0) for g in gains]
    total = sum(kept)
    return [g / total for g in kept] if total > 0 else [1.0 / len(kept)] * len(kept)


class ParticleSwarm(Search):
    name = "pso"
    shares_calls = False  # its swarm requests are ~60 rows already, as the genetic search's

    def __init__(self, population: int = 60, iterations: int = 20, v_max: float = 3.0, max_turn_retries: int = 20):
        if population < 1 or iterations < 0:
            raise ValueError(f"population must be >= 1 and iterations >= 0, got {population}, {iterations}")
        self.population, self.iterations, self.v_max = population, iterations, v_max
        self.max_turn_retries = max_turn_retries
        self.omega, self.c = (0.8, 0.2), (0.8, 0.2)  # Zang et al.: omega 0.8 -> 0.2, C1 0.8 -> 0.2, C2 0.2 -> 0.8

    def config(self) -> dict:
        keys = ("population", "iterations", "v_max", "omega", "c", "max_turn_retries")
        return {"name": self.name, **{k: getattr(self, k) for k in keys}}

    def best_neighbours(self, ctx: AttackContext, current: GoalResult) -> tuple[list[GoalResult], list[float]]:
        """Per word: the best-scoring substitute (the text itself where none), and mutation weights by gain."""
        text = current.text
        neighbours = ctx.neighbours(text, ctx.modifiable(text))
        flat = [t for i in sorted(neighbours) for t in neighbours[i]]
        results = ctx.goal.evaluate(flat) if flat else []
        best, gains, at = [current] * text.num_words, [0.0] * text.num_words, 0
        for i in sorted(neighbours):
            mine, at = results[at : at + len(neighbours[i])], at + len(neighbours[i])
            if mine:
                top = max(mine, key=lambda r: r.score)  # the first of equals, as numpy's argmax
                best[i], gains[i] = top, top.score - current.score
        return best, gain_weights(gains)

    def mutate(self, ctx: AttackContext, member: GoalResult) -> GoalResult:
        best, weights = self.best_neighbours(ctx, member)
        return best[ctx.rng.choices(range(len(best)), weights=weights)[0]]

    def turn(self, ctx: AttackContext, source: GoalResult, target: AttackedText, probs) -> AttackedText:
        """`source` moved towards `target`; the source itself when no draw passes the constraints."""
        for _ in range(self.max_turn_retries + 1):
            changes = turn_words(source.text.words, target.words, probs, [ctx.rng.random() for _ in probs])
            if not changes:
                return source.text
            moved = source.text.replace_words(changes)
            if all(c.filter([moved], source.text, ctx.original) for c in ctx.constraints):
                return moved
        return source.text

    def run(self, ctx: AttackContext) -> GoalResult:
        best, weights = self.best_neighbours(ctx, ctx.initial)
        if all(b is ctx.initial for b in best):  # nothing can ever move (TextAttack spends its iterations on copies)
            ctx.notes.append("no position has a candidate that passes the constraints")
            return ctx.initial
        swarm = [best[i] for i in ctx.rng.choices(range(len(best)), weights=weights, k=self.population)]
        n_words = ctx.original.num_words
        velocity = np.array([[ctx.rng.uniform(-self.v_max, self.v_max)] * n_words for _ in swarm])
        top = max(swarm, key=lambda r: r.score)  # the first of equals
        if ctx.goal.search_over or top.succeeded:
            return top
        local, elite = list(swarm), top
        for t in range(self.iterations):
            for step in (self._move, self._mutate_all):
                swarm = step(ctx, swarm, local, elite, velocity, t)
                top = max(swarm, key=lambda r: r.score, default=elite)
                if top.succeeded:
                    return top
                if ctx.goal.search_over:  # the budget is spent: the best seen
                    return max(elite, top, key=lambda r: r.score)
            local = [m if m.score > e.score else e for m, e in zip(swarm, local, strict=True)]
            elite = top if top.score > elite.score else elite
        return elite

    def _move(self, ctx, swarm, local, elite, velocity, t: int) -> list[GoalResult]:
        """Every particle's velocity update and turns, then the moved swarm evaluated in one batch."""
        omega, c1, c2 = schedule(t, self.iterations, self.omega, self.c)
        moved = []
        for k, member in enumerate(swarm):
            velocity[k] = velocity_step(
                velocity[k], member.text.words, local[k].text.words, elite.text.words, omega, self.v_max
            )
            probs = [1.0 / (1.0 + math.exp(-v)) for v in velocity[k]]
            text = member.text
            if ctx.rng.random() < c1:
                text = self.turn(ctx, local[k], text, probs)
            if ctx.rng.random() < c2:
                text = self.turn(ctx, elite, text, probs)
            moved.append(text)
        return ctx.goal.evaluate(moved)  # shorter when the budget ran out

    def _mutate_all(self, ctx: AttackContext, swarm: list[GoalResult], *_) -> list[GoalResult]:
        """Each particle mutated with probability 1 - 2 x its share of changed words (the authors' code)."""
        out = list(swarm)
        for k, member in enumerate(swarm):
            if ctx.rng.random() < 1 - 2 * len(member.text.modified) / member.text.num_words:
                out[k] = self.mutate(ctx, member)
            if ctx.goal.search_over:
                break
        return out
