"""The defenses by name: the ensembles (a model config's `robustft_ensemble.kind`) and A2T, which only trains."""

from __future__ import annotations

from robustft.defenses.a2t import A2T
from robustft.defenses.base import Defense
from robustft.defenses.dne import DNE
from robustft.defenses.ranmask import RanMASK
from robustft.defenses.safer import SAFER
from robustft.defenses.settings import KINDS, EnsembleSettings

ENSEMBLES: dict[str, type[Defense]] = {cls.name: cls for cls in (SAFER, RanMASK, DNE)}
if tuple(ENSEMBLES) != KINDS:  # a config's kind is checked against KINDS before any class is looked up
    raise ImportError(f"robustft.defenses: settings.KINDS {KINDS} and the ensemble classes {tuple(ENSEMBLES)} disagree")
DEFENSES: dict[str, type] = {**ENSEMBLES, A2T.name: A2T}
CERTIFIED = {name: cls.definition for name, cls in DEFENSES.items() if cls.definition}  # defenses with a certificate


def defense_for(settings: EnsembleSettings, tokenizer, task, neighbors=None) -> Defense:
    return ENSEMBLES[settings.kind](settings, tokenizer, task, neighbors)
