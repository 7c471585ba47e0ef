"""Words of a text with their character spans: the one word splitter of attacks and adversaries.

A word is a run of letters/digits, optionally joined by an inner apostrophe or hyphen ("don't",
"well-made"). Everything between words is punctuation or space and is never changed by a substitution.
"""

from __future__ import annotations

import re

WORD_RE = re.compile(r"[^\W_]+(?:['’\-][^\W_]+)*")


def split_words(text: str) -> tuple[tuple[str, ...], tuple[tuple[int, int], ...]]:
    """The words of `text` and their (start, end) character spans."""
    matches = list(WORD_RE.finditer(text))
    return tuple(m.group() for m in matches), tuple(m.span() for m in matches)


def is_one_word(candidate: str) -> bool:
    """True when `candidate` is exactly one word by `WORD_RE` (no spaces, underscores, punctuation)."""
    return WORD_RE.fullmatch(candidate) is not None


def match_case(template: str, word: str) -> str:
    """`word` written with the case pattern of `template` (UPPER, Title or lower as found)."""
    if template.isupper() and len(template) > 1:
        return word.upper()
    if template[:1].isupper():
        return word[:1].upper() + word[1:]
    return word
