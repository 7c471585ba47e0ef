"""Several transformations as one: each word's candidates are every part's, in part order, duplicates merged
(TextAttack's CompositeTransformation; TextBugger = character bugs + embedding neighbours)."""

from __future__ import annotations

from robustft.attacks.transformations.base import Transformation
from robustft.attacks.words import AttackedText


class CompositeTransformation(Transformation):
    name = "composite"

    def __init__(self, parts: list[Transformation]):
        if not parts:
            raise ValueError("a composite transformation needs at least one part")
        self.parts = list(parts)

    def candidates(self, text: AttackedText, indices: list[int]) -> dict[int, list[str]]:
        out: dict[int, dict[str, None]] = {i: {} for i in indices}
        for part in self.parts:
            for i, words in part.candidates(text, indices).items():
                out[i].update(dict.fromkeys(words))
        return {i: list(words) for i, words in out.items()}

    def seeded(self, rng) -> Transformation:
        parts = [p.seeded(rng) for p in self.parts]
        return self if all(a is b for a, b in zip(parts, self.parts, strict=True)) else CompositeTransformation(parts)

    def config(self) -> dict:
        return {"name": self.name, "parts": [p.config() for p in self.parts]}

    def resources(self) -> dict[str, str]:
        files: dict[str, str] = {}
        for p in self.parts:
            files.update(p.resources())
        return files
