"""Greedy search by word importance (TextFooler: deletion; BERT-Attack: masking; unknown token) and
PWWS's weighted saliency (Ren et al. 2019).

Words are ranked once on the original text, then visited in order: at each, the best-scoring
candidate replaces the word if it raises the attacker's score; the search stops at the first success,
keeping among successful candidates the one most similar to the reference (as TextAttack's
GreedyWordSwapWIR). PWWS with apply="ordered" follows Ren et al.'s Algorithm 1 and the RIFT release instead:
each word's best substitute is chosen once on the original text and applied in order whatever its gain,
one query per word, until the label flips.
"""

from __future__ import annotations

import itertools

import numpy as np

from robustft.attacks.attack import AttackContext, Search
from robustft.attacks.goal import GoalResult

METHODS = ("delete", "mask", "unk", "weighted-saliency")
SALIENCY_GAINS = ("delta", "raw")  # PWWS: Ren et al.'s delta p, or TextAttack's raw best score
APPLY = ("improving", "ordered")  # TextAttack's greedy step, or Ren et al.'s / the RIFT release's fixed swaps


def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max())
    return e / e.sum()


def pwws_priority(unk_scores: np.ndarray, initial_score: float, best_scores: np.ndarray, gain: str) -> np.ndarray:
    """PWWS's word order: softmax(saliency) * gain (Ren et al. 2019, eq. 6-8).

    saliency_i = score(x with word i -> unknown) - score(x), i.e. the drop of p(true); softmax is
    shift-invariant, so the raw unknown-token scores give the same weights (TextAttack uses them).
    gain "delta": best substitute's score - score(x) (the paper's delta p); "raw": the best substitute's
    score itself (TextAttack 0.3.11). A position without a substitute has gain 0 (raw: TextAttack's 0.0).
    """
    weights = softmax(np.asarray(unk_scores, dtype=np.float64) - initial_score)
    best = np.asarray(best_scores, dtype=np.float64)
    gains = np.where(np.isnan(best), 0.0, best - initial_score if gain == "delta" else best)
    return weights * gains


def most_similar_success(ranked: list[GoalResult], similarity) -> GoalResult:
    """TextAttack's GreedyWordSwapWIR rule: among the successes that lead the score-ranked candidates
    (stopping at the first non-success), the most similar one; ties keep the higher score."""
    wins = list(itertools.takewhile(lambda r: r.succeeded, ranked))
    return max(wins, key=lambda r: similarity(r.text))


class GreedyWordImportance(Search):
    name = "greedy-word-importance"

    def __init__(self, method: str = "delete", saliency_gain: str = "delta", apply: str = "improving"):
        if method not in METHODS:
            raise ValueError(f"importance method must be one of {METHODS}, not {method!r}")
        if saliency_gain not in SALIENCY_GAINS:
            raise ValueError(f"saliency_gain must be one of {SALIENCY_GAINS}, not {saliency_gain!r}")
        if apply not in APPLY or (apply == "ordered" and method != "weighted-saliency"):
            raise ValueError(f"apply must be one of {APPLY} ('ordered' for PWWS's weighted saliency), not {apply!r}")
        self.method, self.saliency_gain, self.apply = method, saliency_gain, apply

    def config(self) -> dict:
        out = {"name": self.name, "method": self.method}
        if self.method == "weighted-saliency":
            out |= {"saliency_gain": self.saliency_gain, "apply": self.apply}
        return out

    def _special(self, ctx: AttackContext, which: str) -> str:
        tok = ctx.goal.victim.tokenizer
        return (tok.mask_token if which == "mask" else tok.unk_token) or ("[MASK]" if which == "mask" else "[UNK]")

    def rank(self, ctx: AttackContext, indices: list[int]) -> list[int]:
        """Indices in decreasing importance (ties keep word order). Costs len(indices) queries (PWWS: more)."""
        return self._rank(ctx, indices)[0]

    def _rank(self, ctx: AttackContext, indices: list[int]) -> tuple[list[int], dict[int, str]]:
        """(indices in decreasing importance, PWWS: each position's best substitute on the original text)."""
        text, goal = ctx.original, ctx.goal
        if self.method == "delete":
            probes = [text.delete_word(i) for i in indices]
        else:
            token = self._special(ctx, "mask" if self.method == "mask" else "unk")
            probes = [text.put_token(i, token) for i in indices]
        scores = goal.scores_of_strings(probes)
        indices = indices[: len(scores)]  # the budget may cut the probes short
        best_words: dict[int, str] = {}
        if self.method == "weighted-saliency":
            best, best_words = self._best_scores(ctx, indices)
            priority = pwws_priority(scores, ctx.initial.score, best, self.saliency_gain)
        else:
            priority = scores
        order = sorted(range(len(indices)), key=lambda n: (-priority[n], n))
        return [indices[n] for n in order], best_words

    def _best_scores(self, ctx: AttackContext, indices: list[int]) -> tuple[np.ndarray, dict[int, str]]:
        """Each position's best substitute score on the original text (NaN where it has none), and its word."""
        best, words = np.full(len(indices), np.nan), {}
        neighbours = ctx.neighbours(ctx.original, indices)
        if ctx.goal.search_over:
            return best, words
        # One request for every position (large batches, the forward floor), read back position by position:
        # the same texts in the same order as one request per position, so a query budget cuts the same prefix.
        results = ctx.goal.evaluate([t for i in indices for t in neighbours[i]])
        at = 0
        for n, i in enumerate(indices):
            mine, at = results[at : at + len(neighbours[i])], at + len(neighbours[i])
            if mine:
                # the last of equal scores, as the release's ascending sort and pop() take (the score is the same)
                top = max(reversed(mine), key=lambda r: r.score)
                best[n], words[i] = top.score, top.text.words[i]
        return best, words

    def run(self, ctx: AttackContext) -> GoalResult:
        order, best_words = self._rank(ctx, ctx.modifiable(ctx.original))
        if self.apply == "ordered":
            return self._apply_in_order(ctx, order, best_words)
        current = ctx.initial
        for i in order:
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
                return most_similar_success(results, ctx.similarity)
        return current

    def _apply_in_order(self, ctx: AttackContext, order: list[int], best_words: dict[int, str]) -> GoalResult:
        """Ren et al.'s Algorithm 1: swap in each word's precomputed best substitute, in order, whatever its gain
        (one query per word), until the label flips; a swap the constraints no longer allow is left out."""
        current = ctx.initial
        for i in order:
            if ctx.goal.search_over:
                break
            if i not in best_words or i not in ctx.modifiable(current.text):
                continue
            wanted = [c for c in ctx.neighbours(current.text, [i])[i] if c.words[i] == best_words[i]]
            if not wanted:
                continue
            results = ctx.goal.evaluate(wanted[:1])
            if not results:
                break
            current = results[0]
            if current.succeeded:
                break
        return current
