"""Search strategies: greedy by word importance (incl. PWWS weighted saliency) and the genetic search."""

from robustft.attacks.search.genetic import Genetic
from robustft.attacks.search.greedy import GreedyWordImportance

__all__ = ["GreedyWordImportance", "Genetic"]
