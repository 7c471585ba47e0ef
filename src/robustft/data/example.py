"""The one record every reader returns and every trainer and attack consumes."""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Example:
    """A labelled text or text pair. For pairs, `text_a` is the premise/question/first sentence."""

    text_a: str
    label: int
    text_b: str | None = None
    id: str = ""

    @property
    def is_pair(self) -> bool:
        return self.text_b is not None

    def field(self, name: str) -> str:
        value = getattr(self, name)
        if value is None:
            raise ValueError(f"example {self.id} has no {name}")
        return value

    def with_field(self, name: str, text: str) -> Example:
        """A copy with one text field replaced (how attacks perturb only the chosen field)."""
        return replace(self, **{name: text})
