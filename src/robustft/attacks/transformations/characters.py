"""Character edits of a word, the bugs of TextBugger (Li et al. 2019) and DeepWordBug (Gao et al. 2018).

Edits (each on the word as written; the substitution then takes the word's case pattern, as every swap does):
- insert-space: a space inside the word ("go od", TextBugger's Insert); the two halves stay one word position, or
  become two words with the recipe setting inserted_space=split (TextAttack; `AttackedText.split_spaces`);
- delete / swap / substitute / insert: delete a character, swap two neighbouring characters, replace one by a
  random letter, insert a random letter;
- homoglyph: one candidate per character that has a look-alike in `HOMOGLYPHS` (TextBugger's Sub-C; TextAttack's
  table). Its look-alikes of "-", "'" and "x" are no letters: such a word keeps its one position (words.py). A
  candidate the word's case pattern would rewrite is dropped ("F1A": "FlA" would become "FLA", no look-alike).
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
from robustft.attacks.words import AttackedText, is_substitute, match_case

EDITS = ("insert-space", "delete", "swap", "substitute", "insert", "homoglyph")
LETTERS = {"ascii_letters": string.ascii_letters, "ascii_lowercase": string.ascii_lowercase}

# TextAttack 0.3.11's look-alike table (WordSwapHomoglyphSwap.homos, which its greedy textbugger recipe reads through
# `_get_replacement_words`; the differential-evolution path and its Unicode "intentional" list serve only the
# DifferentialEvolution search): one-to-one, the 26 lower-case letters, the 10 digits, "-" and "'". An upper-case
# letter has none (TextAttack's keys are lower case). Li et al.'s own examples (o -> 0, l -> 1, a -> @) are not in it.
HOMOGLYPHS = {
    "-": "\u02d7",  # modifier letter minus sign
    "9": "\u09ed",  # Bengali digit seven
    "8": "\u0222",  # Latin capital letter OU
    "7": "\U0001d7d5",  # mathematical bold digit seven
    "6": "\u0431",  # Cyrillic be
    "5": "\u01bc",  # Latin capital letter tone five
    "4": "\u13ce",  # Cherokee letter se
    "3": "\u01b7",  # Latin capital letter ezh
    "2": "\u14bf",  # Canadian syllabics sayisi m
    "1": "l",
    "0": "O",
    "'": "`",
    "a": "\u0251",  # Latin alpha
    "b": "\u042c",  # Cyrillic capital soft sign
    "c": "\u03f2",  # Greek lunate sigma
    "d": "\u0501",  # Cyrillic komi de
    "e": "\u0435",  # Cyrillic ie
    "f": "\U0001d68f",  # mathematical monospace f
    "g": "\u0261",  # Latin script g
    "h": "\u0570",  # Armenian ho
    "i": "\u0456",  # Cyrillic Byelorussian-Ukrainian i
    "j": "\u03f3",  # Greek yot
    "k": "\U0001d48c",  # mathematical bold italic k
    "l": "\u217c",  # small Roman numeral fifty
    "m": "\uff4d",  # fullwidth m
    "n": "\u0578",  # Armenian vo
    "o": "\u043e",  # Cyrillic o
    "p": "\u0440",  # Cyrillic er
    "q": "\u051b",  # Cyrillic qa
    "r": "\u2c85",  # Coptic gamma
    "s": "\u0455",  # Cyrillic dze
    "t": "\U0001d69d",  # mathematical monospace t
    "u": "\u057d",  # Armenian seh
    "v": "\u0475",  # Cyrillic izhitsa
    "w": "\u051d",  # Cyrillic we
    "x": "\u00d7",  # multiplication sign
    "y": "\u0443",  # Cyrillic u
    "z": "\u1d22",  # Latin letter small capital z
}


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
            cands = [word[:i] + HOMOGLYPHS[c] + word[i + 1 :] for i, c in enumerate(word) if c in HOMOGLYPHS]
            return [c for c in cands if match_case(word, c) == c]
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
