"""Evaluation: clean accuracy, the probe, statistics.

The verb `robustft.evaluate(cfg)` is `robustft.evaluation.run.evaluate`."""
