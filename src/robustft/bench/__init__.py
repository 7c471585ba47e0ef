"""Benchmarks of methods x tasks x sizes x seeds: presets (presets.py), the plan of cells and jobs (matrix.py,
plan.py), the runner (runner.py; run.py builds the deadline predicate it asks), pricing from measured rates (pricing/,
fed by costs.py), carrying progress between machines (carry.py). The verb `robustft.bench(cfg)` is
`robustft.bench.run.bench`; `list_jobs`, `save` and `restore` beside it are the bench's other commands."""
