"""Word/offset bookkeeping: a text as words with character spans, swapped without losing the rest.

A word is a run of letters/digits, optionally joined by an inner apostrophe or hyphen ("don't",
"well-made"). Everything between words (spaces, punctuation, SST-2's " 's ") is kept verbatim, so a
swap changes only the characters of the swapped word. Substitutes take the case pattern of the word
they replace. Substitutes must themselves be one word (`is_one_word`), so re-splitting an adversarial
text gives the same number of words and differs from the original only at the modified positions; the one
exception is a character attack's inserted space (TextBugger: "go od"), which stays one word position here
(`AttackedText.units`), so indices, caps and windows keep counting the original words.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from robustft.data.text import WORD_RE, is_one_word, match_case, split_words  # noqa: F401 (re-exported)


def is_substitute(candidate: str) -> bool:
    """One word, or words joined by single spaces (a word a character attack split by inserting a space)."""
    return all(is_one_word(part) for part in candidate.split(" "))


@dataclass(frozen=True)
class AttackedText:
    """An immutable text being attacked: its words, their spans, and which positions differ from the original.

    `modified` holds the word indices changed relative to the original text; `last_modified` those
    changed by the most recent step (what windowed constraints look at).
    """

    text: str
    words: tuple[str, ...] = field(init=False)
    spans: tuple[tuple[int, int], ...] = field(init=False)
    original_words: tuple[str, ...] | None = None
    modified: frozenset[int] = frozenset()
    last_modified: frozenset[int] = frozenset()
    units: tuple[tuple[int, int], ...] | None = None  # word spans, given once a word holds an inserted space

    def __post_init__(self):
        words, spans = split_words(self.text) if self.units is None else self._given_units()
        object.__setattr__(self, "words", words)
        object.__setattr__(self, "spans", spans)
        if self.original_words is None:
            object.__setattr__(self, "original_words", words)

    def _given_units(self) -> tuple[tuple[str, ...], tuple[tuple[int, int], ...]]:
        return tuple(self.text[s:e] for s, e in self.units), tuple(self.units)

    @property
    def num_words(self) -> int:
        return len(self.words)

    def replace_words(self, changes: dict[int, str]) -> AttackedText:
        """A new text with word i replaced by changes[i] (case matched); other characters untouched."""
        if not changes:
            return self
        pieces, cursor, news = [], 0, {}
        for i in sorted(changes):
            start, end = self.spans[i]
            new = news[i] = match_case(self.words[i], changes[i])
            if not is_substitute(new):
                raise ValueError(f"substitute {new!r} is not a single word")
            pieces += [self.text[cursor:start], new]
            cursor = end
        pieces.append(self.text[cursor:])
        new_text = "".join(pieces)
        split = self.units is not None or any(" " in new for new in news.values())
        modified = set(self.modified)
        for i in changes:
            if self.original_words[i].lower() == changes[i].lower():
                modified.discard(i)  # swapped back to the original word
            else:
                modified.add(i)
        units = self._shifted_units(news) if split else None
        return AttackedText(new_text, self.original_words, frozenset(modified), frozenset(changes), units)

    def _shifted_units(self, news: dict[int, str]) -> tuple[tuple[int, int], ...]:
        """The word spans after replacing word i by news[i]: explicit, so a word with a space stays one word."""
        units, shift = [], 0
        for j, (start, end) in enumerate(self.spans):
            new_end = start + shift + len(news[j]) if j in news else end + shift
            units.append((start + shift, new_end))
            shift = new_end - end
        return tuple(units)

    def replace_word(self, index: int, word: str) -> AttackedText:
        return self.replace_words({index: word})

    def delete_word(self, index: int) -> str:
        """The plain text with word `index` removed (with one adjacent space); used for importance only."""
        start, end = self.spans[index]
        if end < len(self.text) and self.text[end] == " ":
            end += 1
        elif start > 0 and self.text[start - 1] == " ":
            start -= 1
        return self.text[:start] + self.text[end:]

    def put_token(self, index: int, token: str) -> str:
        """The plain text with word `index` replaced by a special token such as [UNK] or [MASK]."""
        start, end = self.spans[index]
        return self.text[:start] + token + self.text[end:]

    def window(self, index: int, size: int | None) -> tuple[int, int]:
        """[lo, hi) word indices of the `size`-word window around `index`, exactly TextAttack's
        `text_window_around_index`: centred (the extra word of an even size goes before), shifted to
        fit at either end of the text."""
        n = self.num_words
        if size is None:
            return 0, n
        half = (size - 1) / 2
        if index - half < 0:
            return 0, min(size, n)
        if index + half >= n:
            return max(0, n - size), n
        return index - math.ceil(half), index + math.floor(half) + 1

    def text_window(self, lo: int, hi: int) -> str:
        """The characters from word lo to word hi-1 (inclusive of the text between them)."""
        if hi <= lo:
            return ""
        return self.text[self.spans[lo][0] : self.spans[hi - 1][1]]

    def swaps(self) -> list[dict]:
        """The reported substitutions: [{index, original, new}] in word order."""
        return [{"index": i, "original": self.original_words[i], "new": self.words[i]} for i in sorted(self.modified)]
