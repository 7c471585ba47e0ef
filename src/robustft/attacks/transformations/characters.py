"""Character edits of a word, the bugs of TextBugger (Li et al. 2019) and DeepWordBug (Gao et al. 2018).

Edits (each on the word as written; the substitution then takes the word's case pattern, as every swap does):
- insert-space: a space inside the word ("go od", TextBugger's Insert); the two halves stay one word position;
- delete / swap / substitute / insert: delete a character, swap two neighbouring characters, replace one by a
  random letter, insert a random letter;
- homoglyph: one candidate per character that has a look-alike in `HOMOGLYPHS` (TextBugger's Sub-C).
The positions follow TextAttack's WordSwap* transformations: with keep_ends, the first and last character stay
(TextBugger), and an insertion never lands after the last character. The random edits draw one position each
(TextAttack's random_one), or, with `draws`, that many edits of a randomly chosen kind (TextDefender's
RandomCompositeTransformation, total_count=50), duplicates merged.

Randomness: `seeded(rng)` binds the edits to one attacked example; each (position, current text) then gets its
own generator seeded from that, so the same seed gives the same adversarial text whatever order the search asks
in, and a cached query is asked again with the same edits.
"""

from __future__ import annotations

import random
import string

from robustft.attacks.transformations.base import Transformation
from robustft.attacks.words import AttackedText, is_substitute

EDITS = ("insert-space", "delete", "swap", "substitute", "insert", "homoglyph")
LETTERS = {"ascii_letters": string.ascii_letters, "ascii_lowercase": string.ascii_lowercase}

# Our look-alike table (one per character, so a word gets at most one candidate per position, as TextAttack
# 0.3's WordSwapHomoglyphSwap): Li et al.'s own examples o -> 0 and l -> 1 (their a -> @ is left out: "@" would
# split the word), and Cyrillic / Latin-extended letters drawn like the Latin ones. Every entry keeps a word one
# word (tests/test_char_attacks.py checks it).
HOMOGLYPHS = {
    "a": "\u0430",  # Cyrillic a
    "c": "\u0441",  # Cyrillic es
    "d": "\u0501",  # Cyrillic komi de
    "e": "\u0435",  # Cyrillic ie
    "g": "\u0261",  # Latin script g
    "h": "\u04bb",  # Cyrillic shha
    "i": "\u0456",  # Cyrillic Byelorussian-Ukrainian i
    "j": "\u0458",  # Cyrillic je
    "l": "1",  # Li et al.
    "o": "0",  # Li et al.
    "p": "\u0440",  # Cyrillic er
    "q": "\u051b",  # Cyrillic qa
    "s": "\u0455",  # Cyrillic dze
    "v": "\u0475",  # Cyrillic izhitsa
    "w": "\u051d",  # Cyrillic we
    "x": "\u0445",  # Cyrillic ha
    "y": "\u0443",  # Cyrillic u
}
HOMOGLYPHS |= {k.upper(): v.upper() for k, v in HOMOGLYPHS.items() if v.upper() != v and len(v.upper()) == 1}
HOMOGLYPHS["O"] = "0"


class CharacterEdits(Transformation):
    name = "character-edits"

    def __init__(
        self,
        edits: tuple[str, ...] | list[str],
        keep_ends: bool = False,
        letters: str = "ascii_letters",
        draws: int | None = None,
        key: int = 0,
    ):
        unknown = [e for e in edits if e not in EDITS]
        if unknown or not edits:
            raise ValueError(f"character edits must be some of {', '.join(EDITS)}, got {list(edits)!r}")
        if letters not in LETTERS:
            raise ValueError(f"letters must be one of {', '.join(LETTERS)}, got {letters!r}")
        self.edits, self.keep_ends, self.letters, self.draws = tuple(edits), keep_ends, letters, draws
        self.key = key

    def seeded(self, rng: random.Random) -> CharacterEdits:
        return CharacterEdits(self.edits, self.keep_ends, self.letters, self.draws, key=rng.getrandbits(64))

    def candidates(self, text: AttackedText, indices: list[int]) -> dict[int, list[str]]:
        # a generator per (example, position, current text): str seeds hash with sha512, stable across processes
        return {i: self.edited(text.words[i], random.Random(f"{self.key}|{i}|{text.text}")) for i in indices}

    def edited(self, word: str, rng: random.Random) -> list[str]:
        """The word's edited forms, in the order of `edits` (or of the draws), duplicates and non-words dropped."""
        kinds = self.edits if self.draws is None else [rng.choice(self.edits) for _ in range(self.draws)]
        out: dict[str, None] = {}
        for kind in kinds:
            for cand in self._edit(kind, word, rng):
                if cand != word and is_substitute(cand):
                    out[cand] = None
        return list(out)

    def _edit(self, kind: str, word: str, rng: random.Random) -> list[str]:
        if kind == "homoglyph":
            return [word[:i] + HOMOGLYPHS[c] + word[i + 1 :] for i, c in enumerate(word) if c in HOMOGLYPHS]
        n, keep = len(word), self.keep_ends or kind == "insert-space"
        if n <= 1:
            return []
        lo = 1 if keep else 0
        hi = {"swap": n - 2 if keep else n - 1}.get(kind, n - 1 if keep else n)  # positions [lo, hi)
        if lo >= hi:
            return []
        i = rng.randrange(lo, hi)
        if kind == "delete":
            return [word[:i] + word[i + 1 :]]
        if kind == "swap":
            return [word[:i] + word[i + 1] + word[i] + word[i + 2 :]]
        if kind == "insert-space":
            return [word[:i] + " " + word[i:]]
        letter = rng.choice(LETTERS[self.letters])
        return [word[:i] + letter + word[i + (kind == "substitute") :]]

    def config(self) -> dict:
        return {
            "name": self.name,
            "edits": list(self.edits),
            "keep_ends": self.keep_ends,
            "letters": self.letters,
            "draws": self.draws,
            "homoglyphs": len(HOMOGLYPHS),
        }
