"""The defenses by the name a model config's `robustft_ensemble.kind` gives them."""

from __future__ import annotations

from robustft.defenses.base import Defense
from robustft.defenses.dne import DNE
from robustft.defenses.ranmask import RanMASK
from robustft.defenses.safer import SAFER
from robustft.defenses.settings import KINDS, EnsembleSettings

DEFENSES: dict[str, type[Defense]] = {cls.name: cls for cls in (SAFER, RanMASK, DNE)}
if tuple(DEFENSES) != KINDS:  # a config's kind is checked against KINDS before any class is looked up
    raise ImportError(f"robustft.defenses: settings.KINDS {KINDS} and the defense classes {tuple(DEFENSES)} disagree")
CERTIFIED = {name: cls.definition for name, cls in DEFENSES.items() if cls.definition}  # defenses with a certificate


def defense_for(settings: EnsembleSettings, tokenizer, task, neighbors=None) -> Defense:
    return DEFENSES[settings.kind](settings, tokenizer, task, neighbors)
