"""Benchmarks of methods x tasks x sizes x seeds. `robustft.bench(cfg)` runs `robustft.bench.run.bench`."""

from robustft.verbs import callable_package

callable_package(__name__, "robustft.bench.run:bench")
