"""Training objectives, registered by name. Importing this package registers every built-in one."""

from robustft.training.objectives import (  # noqa: F401
    a2t,
    ascc,
    dne,
    freelb,
    infobert,
    pgd,
    ranmask,
    rift,
    safer,
    standard,
    trades,
)
from robustft.training.objectives.base import OBJECTIVES, Objective, build_objective, register_objective

__all__ = ["OBJECTIVES", "Objective", "build_objective", "register_objective"]
