"""What a search perturbs: the one text built from an example, and the way back to an example.

Single texts: the text itself. Pairs (NLI, RTE, QNLI, QQP) have two accountings:
- "joint" (TextAttack's and TextDefender's, the default): premise and hypothesis joined by a line
  break into one text, as TextAttack's `AttackedText.text` joins its columns. Words, the perturbed %,
  the max-words caps, the per-word query budget and the sentence-encoder windows all count both parts;
  the words of the frozen part are never modifiable (TextAttack's InputColumnModification).
- "perturbed" (ours before): only the perturbed field is the text; the other one is fixed context.
"""

from __future__ import annotations

from dataclasses import dataclass

from robustft.attacks.words import AttackedText
from robustft.data.example import Example
from robustft.errors import ConfigError

PAIR_WORDS = ("joint", "perturbed")
SEPARATOR = "\n"


@dataclass(frozen=True)
class TextView:
    example: Example
    field: str
    joint: bool

    @classmethod
    def of(cls, example: Example, field: str, pair_words: str = "joint") -> TextView:
        if pair_words not in PAIR_WORDS:
            raise ConfigError(f"pair_words: expected one of {', '.join(PAIR_WORDS)}, got '{pair_words}'")
        return cls(example, field, example.is_pair and pair_words == "joint")

    @property
    def other(self) -> str:
        return "text_a" if self.field == "text_b" else "text_b"

    @property
    def field_start(self) -> int:
        """Character offset of the perturbed field in the attacked text."""
        if self.joint and self.field == "text_b":
            return len(self.example.text_a) + len(SEPARATOR)
        return 0

    def text(self) -> str:
        if self.joint:
            return self.example.text_a + SEPARATOR + self.example.text_b
        return self.example.field(self.field)

    def field_text(self, text: str) -> str:
        """The perturbed field's part of an attacked text (the frozen part never changes length)."""
        if not self.joint:
            return text
        if self.field == "text_b":
            return text[self.field_start :]
        return text[: len(text) - len(SEPARATOR) - len(self.example.text_b)]

    def to_example(self, text: str) -> Example:
        return self.example.with_field(self.field, self.field_text(text))

    def frozen(self, text: AttackedText) -> set[int]:
        """Word indices of the frozen part of a joint pair (nothing for single texts)."""
        if not self.joint:
            return set()
        if self.field == "text_b":
            return {i for i, (s, _) in enumerate(text.spans) if s < self.field_start}
        cut = len(text.text) - len(self.example.text_b)
        return {i for i, (s, _) in enumerate(text.spans) if s >= cut}

    def words_before_field(self, text: AttackedText) -> int:
        return sum(1 for s, _ in text.spans if s < self.field_start)
