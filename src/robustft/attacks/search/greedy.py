"""Greedy search by word importance (TextFooler: deletion; BERT-Attack: masking; unknown token) and
PWWS's weighted saliency (Ren et al. 2019).

Words are ranked once on the original text, then visited in order: at each, the best-scoring
candidate replaces the word if it raises the attacker's score; the search stops at the first success,
keeping among successful candidates the one most similar to the reference (as TextAttack's
GreedyWordSwapWIR).
"""

from __future__ import annotations

import numpy as np

from robustft.attacks.attack import AttackContext, Search
from robustft.attacks.goal import GoalResult

METHODS = ("delete", "mask", "unk", "weighted-saliency")


def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max())
    return e / e.sum()


class GreedyWordImportance(Search):
    name = "greedy-word-importance"

    def __init__(self, method: str = "delete"):
        if method not in METHODS:
            raise ValueError(f"importance method must be one of {METHODS}, not {method!r}")
        self.method = method

    def config(self) -> dict:
        return {"name": self.name, "method": self.method}

    def _special(self, ctx: AttackContext, which: str) -> str:
        tok = ctx.goal.victim.tokenizer
        return (tok.mask_token if which == "mask" else tok.unk_token) or ("[MASK]" if which == "mask" else "[UNK]")

    def rank(self, ctx: AttackContext, indices: list[int]) -> list[int]:
        """Indices in decreasing importance (ties keep word order). Costs len(indices) queries (PWWS: more)."""
        text, goal = ctx.original, ctx.goal
        if self.method == "delete":
            probes = [text.delete_word(i) for i in indices]
        else:
            token = self._special(ctx, "mask" if self.method == "mask" else "unk")
            probes = [text.put_token(i, token) for i in indices]
        scores = goal.scores_of_strings(probes)
        indices = indices[:len(scores)]  # the budget may cut the probes short
        if self.method == "weighted-saliency":
            # Ren et al.: saliency = drop of p(true) when the word becomes unknown; gain = the best
            # substitute's drop. TextAttack multiplies by the best substitute's raw score instead.
            saliency = softmax(scores - ctx.initial.score)
            neighbours = ctx.neighbours(text, indices)
            gains = np.zeros(len(indices))
            for n, i in enumerate(indices):
                if neighbours[i] and not goal.search_over:
                    results = goal.evaluate(neighbours[i])
                    if results:
                        gains[n] = max(r.score for r in results) - ctx.initial.score
            priority = saliency * gains
        else:
            priority = scores
        order = sorted(range(len(indices)), key=lambda n: (-priority[n], n))
        return [indices[n] for n in order]

    def run(self, ctx: AttackContext) -> GoalResult:
        current = ctx.initial
        for i in self.rank(ctx, ctx.modifiable(ctx.original)):
            if ctx.goal.search_over:
                break
            if i not in ctx.modifiable(current.text):
                continue  # e.g. the max-words quota is used up
            candidates = ctx.neighbours(current.text, [i])[i]
            if not candidates:
                continue
            results = ctx.goal.evaluate(candidates)
            if not results:
                break
            results.sort(key=lambda r: -r.score)
            if results[0].score <= current.score:
                continue
            current = results[0]
            if current.succeeded:
                wins = [r for r in results if r.succeeded]
                return max(wins, key=lambda r: ctx.similarity(r.text))  # first of equals: highest score
        return current
