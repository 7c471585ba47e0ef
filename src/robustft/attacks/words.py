"""Word/offset bookkeeping: a text as words with character spans, swapped without losing the rest.

A word is a run of letters/digits, optionally joined by an inner apostrophe or hyphen ("don't",
"well-made"). Everything between words (spaces, punctuation, SST-2's " 's ") is kept verbatim, so a
swap changes only the characters of the swapped word. Substitutes take the case pattern of the word
they replace. Substitutes must themselves be one word (`is_one_word`), so re-splitting an adversarial
text gives the same number of words and differs from the original only at the modified positions; the one
exception is a character attack's inserted space (TextBugger: "go od"), which stays one word position here
(`AttackedText.units`), so indices, caps and windows keep counting the original words; with `split_spaces` (TextAttack's
way) its halves become two words and the positions after it move on by one. TextAttack's look-alikes of "-", "'" and
"x" (`LOOKALIKE_MARKS`, TextBugger's Sub-C) are no letters; a word holding one also keeps its one position.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from robustft.data.text import WORD_RE, is_one_word, match_case, split_words  # noqa: F401 (re-exported)

# TextAttack 0.3.11's look-alikes of "-", "'" and "x" (modifier minus, grave accent, multiplication sign): its
# `words_from_text` counts them as word characters, WORD_RE does not.
LOOKALIKE_MARKS = "\u02d7`\u00d7"
_MARKS_AS_LETTERS = str.maketrans(dict.fromkeys(LOOKALIKE_MARKS, "a"))


def is_substitute(candidate: str) -> bool:
    """One word, or words joined by single spaces (a word a character attack split by inserting a space); a
    look-alike mark counts as a letter."""
    return all(is_one_word(part) for part in candidate.translate(_MARKS_AS_LETTERS).split(" "))


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
    units: tuple[tuple[int, int], ...] | None = None  # word spans, given once a word holds a space or a mark
    split_spaces: bool = False  # an inserted space makes two words (TextAttack); `original_words` then per position
    origin: tuple[int, ...] | None = None  # split_spaces: each position's index in the original text, once split

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
        if self.split_spaces and any(" " in new for new in news.values()):
            return self._respaced(new_text, news)
        split = self.units is not None or any(not is_one_word(new) for new in news.values())
        modified = set(self.modified)
        for i in changes:
            if self.original_words[i].lower() == changes[i].lower():
                modified.discard(i)  # swapped back to the original word
            else:
                modified.add(i)
        units = self._shifted_units(news) if split else None
        return AttackedText(
            new_text,
            self.original_words,
            frozenset(modified),
            frozenset(changes),
            units,
            self.split_spaces,
            self.origin,
        )

    def _respaced(self, new_text: str, news: dict[int, str]) -> AttackedText:
        """TextAttack's way with a space inserted into a word: each half is a word, both modified, and every later
        position moves on (its modified mark with it). `original_words` then holds, per position, the original word
        now there (both halves: the word they came from), so a stopword is judged by the word at the position."""
        units, originals, origin, modified, last, shift = [], [], [], set(), set(), 0
        for j, (start, end) in enumerate(self.spans):
            here = len(units)
            if j not in news:
                units.append((start + shift, end + shift))
                originals.append(self.original_words[j])
                origin.append(j if self.origin is None else self.origin[j])
                modified |= {here} if j in self.modified else set()
                continue
            at = start + shift
            for part in news[j].split(" "):
                units.append((at, at + len(part)))
                at += len(part) + 1
            shift += len(news[j]) - (end - start)
            originals += [self.original_words[j]] * (len(units) - here)
            origin += [j if self.origin is None else self.origin[j]] * (len(units) - here)
            mine = set(range(here, len(units)))
            last |= mine
            if len(mine) > 1 or self.original_words[j].lower() != news[j].lower():
                modified |= mine
        return AttackedText(
            new_text, tuple(originals), frozenset(modified), frozenset(last), tuple(units), True, tuple(origin)
        )

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
        """The reported substitutions: [{index, original, new}] in word order, indices counting the original words (a
        split word's halves, split_spaces, are one swap: "good" -> "go od", as without it)."""
        if self.origin is None:
            return [
                {"index": i, "original": self.original_words[i], "new": self.words[i]} for i in sorted(self.modified)
            ]
        out = []
        for o in sorted({self.origin[i] for i in self.modified}):
            here = [i for i, k in enumerate(self.origin) if k == o]
            new = self.text[self.spans[here[0]][0] : self.spans[here[-1]][1]]
            out.append({"index": o, "original": self.original_words[here[0]], "new": new})
        return out
