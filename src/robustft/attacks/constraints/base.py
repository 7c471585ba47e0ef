"""A constraint restricts which words may change (`modifiable`, before a transformation) and/or which
transformed texts are kept (`filter`, after it). One class may do both (e.g. max words perturbed)."""

from __future__ import annotations

from robustft.attacks.words import AttackedText


class Constraint:
    name = "constraint"

    def modifiable(self, text: AttackedText) -> set[int] | None:
        """Word indices this constraint allows to change; None = no restriction."""
        return None

    def filter(
        self, candidates: list[AttackedText], current: AttackedText, original: AttackedText
    ) -> list[AttackedText]:
        """The candidates (texts one step from `current`) this constraint accepts."""
        return candidates

    def config(self) -> dict:
        return {"name": self.name}

    def resources(self) -> dict[str, str]:
        return {}
