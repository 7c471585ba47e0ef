"""A transformation proposes substitute words for chosen word positions of a text."""

from __future__ import annotations

from robustft.attacks.words import AttackedText


class Transformation:
    name = "transformation"

    def candidates(self, text: AttackedText, indices: list[int]) -> dict[int, list[str]]:
        """{index: substitute words (lower case, one word each, best first)} for each index."""
        return {i: self.words_for(text.words[i]) for i in indices}

    def words_for(self, word: str) -> list[str]:  # context-free transformations implement this
        raise NotImplementedError

    def seeded(self, rng) -> Transformation:
        """The transformation one example is attacked with: random ones (character edits) take their draws from
        `rng`, the example's seeded generator; deterministic ones are themselves and leave `rng` untouched."""
        return self

    def config(self) -> dict:
        return {"name": self.name}

    def resources(self) -> dict[str, str]:
        """{name: file path} of every resource used, hashed into the run's config."""
        return {}
