"""Training objectives, registered by name. Importing this package registers every built-in one."""

from robustft.training.objectives import ascc, freelb, infobert, pgd, rift, standard, trades  # noqa: F401
from robustft.training.objectives.base import OBJECTIVES, Objective, build_objective, register_objective

__all__ = ["OBJECTIVES", "Objective", "build_objective", "register_objective"]
