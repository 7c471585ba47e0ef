"""Evaluation: clean accuracy, the probe, statistics. `robustft.evaluate(cfg)` runs `robustft.evaluate.run.evaluate`."""

from robustft.verbs import callable_package

callable_package(__name__, "robustft.evaluate.run:evaluate")
