"""An ensemble defense's settings as the model config keeps them (`robustft_ensemble` in config.json: the `kind`
names the defense), so a saved SAFER, RanMASK or DNE model says how it predicts."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from robustft.errors import ConfigError

CONFIG_KEY = "robustft_ensemble"
KINDS = ("safer", "ranmask", "dne")  # the defenses of `robustft.defenses` (its registry checks they agree)
# logits: TextDefender's default ('logits': the copies' logits, each scaled to unit L2 norm, averaged, then a
# softmax); probs: the mean of the copies' class probabilities; votes: each class's share of the copies' argmaxes
# (the majority-vote classifier, the one the certificates certify).
VOTES = ("logits", "probs", "votes")


@dataclass(frozen=True)
class EnsembleSettings:
    kind: str
    copies: int = 100  # TextDefender's ensemble_num (DNE: 12, its wrapper's constant)
    vote: str = "logits"  # TextDefender's ensemble_method default
    rate: float = 0.9  # RanMASK: share of words masked
    min_keep: int = 2  # RanMASK: words always left unmasked (TextDefender's mask_sentence)
    alpha: float = 1.0  # DNE: Dirichlet concentration of a word and its neighbours
    decay: float = 0.5  # DNE: factor on the concentration of second-order neighbours
    neighbours: int = 50  # DNE: table width (the word and up to 49 neighbours); SAFER: 9 (the word + 8)
    seed: int = 0
    # rows per forward of the copies: on CPU 32-row forwards ran 20% faster than 128 or 512 (benchmarks/results/
    # ensemble_cost.json, MiniLM); a GPU wants far more
    chunk: int = 32

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ConfigError(f"ensemble kind must be one of {', '.join(KINDS)}, not {self.kind!r}")
        if self.vote not in VOTES:
            raise ConfigError(f"ensemble vote must be one of {', '.join(VOTES)}, not {self.vote!r}")
        if self.copies < 1 or self.chunk < 1:
            raise ConfigError(f"ensemble copies and chunk must be at least 1, not {self.copies} and {self.chunk}")
        if not 0.0 <= self.rate < 1.0:
            raise ConfigError(f"ensemble mask rate must be in [0, 1), not {self.rate}")

    def to_config(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_config(cls, values: dict) -> EnsembleSettings:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ConfigError(f"{CONFIG_KEY} in the model config has unknown keys: {', '.join(unknown)}")
        return cls(**values)
