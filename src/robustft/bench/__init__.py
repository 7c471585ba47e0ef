"""Benchmarks of methods x tasks x sizes x seeds. The verb `robustft.bench(cfg)` is `robustft.bench.run.bench`."""
