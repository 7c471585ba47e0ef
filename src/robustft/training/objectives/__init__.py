"""Training objectives by name: an explicit table, as the attack recipes' (`robustft.attacks.recipes.RECIPES`).
A new objective is a module here with an `Objective` subclass whose `name` is its method name, listed below."""

from __future__ import annotations

import difflib
import math
from typing import Any

from robustft.errors import ConfigError
from robustft.training.objectives import a2t, ascc, dne, freelb, infobert, pgd, ranmask, rift, safer, standard, trades
from robustft.training.objectives.base import ARG_BOUNDS, Objective, declared_args, fits, type_name

OBJECTIVES: dict[str, type[Objective]] = {
    cls.name: cls
    for cls in (
        standard.Standard,
        pgd.PGD,
        freelb.FreeLB,
        freelb.FreeLBPlusPlus,
        trades.TRADES,
        infobert.InfoBERT,
        ascc.ASCC,
        a2t.A2T,
        safer.SAFER,
        ranmask.RanMASK,
        dne.DNE,
        rift.RIFT,
        rift.RiftImdb,
        rift.RiftSnli,
    )
}


def objective_class(name: str) -> type[Objective]:
    """The objective of method `name`; an unknown name is one ConfigError with the closest known one."""
    if name not in OBJECTIVES:
        close = difflib.get_close_matches(name, list(OBJECTIVES), n=1)
        hint = f"did you mean '{close[0]}'? " if close else ""
        raise ConfigError(f"unknown method '{name}'; {hint}known: {', '.join(sorted(OBJECTIVES))}")
    return OBJECTIVES[name]


def build_objective(name: str, params: dict[str, Any] | None = None) -> Objective:
    check_method_args(name, params or {})
    try:
        return OBJECTIVES[name](**(params or {}))
    except TypeError as exc:
        raise ConfigError(f"bad parameters for method '{name}': {exc}") from None


def check_method_args(name: str, args: dict[str, Any]) -> None:
    """The method exists and each of `args` is one of its declared arguments, of its type and in its range; else one
    ConfigError naming `method_args.KEY` (with the closest name for a misspelled one)."""
    cls = objective_class(name)
    declared = declared_args(cls)
    bounds = {**ARG_BOUNDS, **cls.arg_bounds}
    for key, value in args.items():
        where = f"method_args.{key}"
        if key not in declared:
            close = difflib.get_close_matches(key, list(declared), n=1)
            hint = f"did you mean '{close[0]}'? " if close else ""
            raise ConfigError(f"{where}: method '{name}' has no such argument; {hint}it has {', '.join(declared)}")
        if not fits(value, declared[key]):
            raise ConfigError(f"{where}: method '{name}' expects {type_name(declared[key])}, got {value!r}")
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if number and not math.isfinite(value):
            raise ConfigError(f"{where}: must be a finite number, got {value}")
        if number and key in bounds and not bounds[key].holds(value):
            raise ConfigError(f"{where}: must be {bounds[key]}, got {value}")


__all__ = ["OBJECTIVES", "Objective", "build_objective", "check_method_args", "objective_class"]
