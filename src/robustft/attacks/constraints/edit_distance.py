"""Levenshtein edit distance between whole texts (DeepWordBug's budget: Gao et al. 2018, epsilon = 30; TextAttack
LevenshteinEditDistance(30) against the original text, characters of the whole attacked text, pairs joined)."""

from __future__ import annotations

from robustft.attacks.constraints.base import Constraint


def levenshtein(a: str, b: str) -> int:
    """Insertions, deletions and substitutions turning `a` into `b` (unit costs).

    The shared prefix and suffix are cut first (a candidate differs from its reference in a few words), then the
    rest runs Myers' bit-parallel algorithm (Hyyro's global form): one column of the DP table per character of the
    longer string, the table's vertical differences kept as bits of Python integers.
    """
    start = 0
    while start < min(len(a), len(b)) and a[start] == b[start]:
        start += 1
    end = 0
    while end < min(len(a), len(b)) - start and a[-1 - end] == b[-1 - end]:
        end += 1
    a, b = a[start : len(a) - end], b[start : len(b) - end]
    if len(a) < len(b):
        a, b = b, a
    m = len(b)
    if m == 0:
        return len(a)
    peq: dict[str, int] = {}
    for i, c in enumerate(b):
        peq[c] = peq.get(c, 0) | (1 << i)
    mask, top = (1 << m) - 1, 1 << (m - 1)
    pv, mv, score = mask, 0, m
    for c in a:
        eq = peq.get(c, 0)
        xv = eq | mv
        xh = (((eq & pv) + pv) ^ pv) | eq
        ph = mv | ~(xh | pv)
        mh = pv & xh
        if ph & top:
            score += 1
        elif mh & top:
            score -= 1
        ph = (ph << 1) | 1  # row 0 of the table grows by one per column (global distance)
        mh <<= 1
        pv = (mh | ~(xv | ph)) & mask
        mv = ph & xv & mask
    return score


class LevenshteinEditDistance(Constraint):
    """A candidate is kept when its whole text is at most `max_edit_distance` character edits from the reference
    (the original text, or the current one)."""

    name = "levenshtein-edit-distance"

    def __init__(self, max_edit_distance: int = 30, compare_against_original: bool = True):
        if isinstance(max_edit_distance, bool) or not isinstance(max_edit_distance, int) or max_edit_distance < 0:
            raise ValueError(f"max_edit_distance must be a whole number >= 0, got {max_edit_distance!r}")
        self.max_edit_distance, self.compare_against_original = max_edit_distance, compare_against_original

    def filter(self, candidates, current, original):
        ref = (original if self.compare_against_original else current).text
        return [c for c in candidates if levenshtein(ref, c.text) <= self.max_edit_distance]

    def config(self) -> dict:
        return {
            "name": self.name,
            "max_edit_distance": self.max_edit_distance,
            "compare_against_original": self.compare_against_original,
        }
