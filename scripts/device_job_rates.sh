#!/bin/bash
# Time a bench's training cells on a lent GPU machine (the `device` tool) with benchmarks/job_rates.py.
#
#   scripts/device_job_rates.sh prepare        # here: what the call needs, into .device/ (git-ignored, carried)
#   device run: command "bash scripts/device_job_rates.sh run", carry [".device"]
#
# The device machine gets the working tree and carried paths only (64 MiB in all; docs/results alone is ~70 MiB,
# so move it aside while the call is in flight), has torch but none of our other pins, and cannot download:
# `prepare` copies the IMDB files and the synonym tables from $ROBUSTFT_DATA, the wheels of our pinned
# transformers and nltk, and MiniLM's config and tokenizer without its 91 MB of weights; `run` gives that
# folder freshly initialised weights (a step's time does not depend on their values) and times the cells.
# Settings: BENCH (a preset or config file, default rift), ONLY (job glob, default '*/imdb/*'), STEPS (default 60),
# NAME (results/<NAME>.json). The data carried: IMDB and SST-2 (rift's IMDB cells, rift-1000's SST-2 cells).
set -euo pipefail
cd "$(dirname "$0")/.."
bench=${BENCH:-rift}
only=${ONLY:-*/imdb/*}
name=${NAME:-job_rates_imdb_gpu}

prepare() {
    : "${ROBUSTFT_DATA:?set ROBUSTFT_DATA to the offline data root}"
    grep -qx "/.device/" .git/info/exclude 2>/dev/null || echo "/.device/" >>.git/info/exclude
    rm -rf .device && mkdir -p .device/data/{imdb,synonyms,glue_subsets} .device/whl .device/model
    cp "$ROBUSTFT_DATA"/imdb/{train,test}.jsonl.gz .device/data/imdb/  # test: the size of the evaluation jobs
    cp -r "$ROBUSTFT_DATA"/sst2 .device/data/ && cp -r "$ROBUSTFT_DATA"/glue_subsets/SST-2 .device/data/glue_subsets/
    cp "$ROBUSTFT_DATA"/synonyms/* .device/data/synonyms/
    local model pins
    model=$(python -c "from robustft.resources import resolve_model; print(resolve_model('minilm'))")
    cp "$model"/{config.json,tokenizer.json,tokenizer_config.json,vocab.txt,special_tokens_map.json} .device/model/
    pins=$(grep -oE '"(transformers|nltk)==[^"]+"' pyproject.toml | tr -d '"')
    # shellcheck disable=SC2086
    python -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 -d .device/whl $pins
    du -sh .device
}

run() {
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
        .device/whl/*.whl
    export PYTHONPATH=/tmp/site:$PWD/src PYTHONUNBUFFERED=1 ROBUSTFT_DATA=$PWD/.device/data TOKENIZERS_PARALLELISM=false
    export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || echo "no nvidia-smi: not a GPU machine"
    python3 -c "
import torch
from transformers import AutoConfig, AutoModel
torch.manual_seed(0)
AutoModel.from_config(AutoConfig.from_pretrained('.device/model')).save_pretrained('.device/model')"
    python3 benchmarks/job_rates.py "$bench" --only "$only" --steps "${STEPS:-60}" --eval_n 2000 --model .device/model \
        --name "$name" 2>&1 | tee "${OUT:-/tmp}/$name.log" | grep -v -i warn
    cp "benchmarks/results/$name.json" "${OUT:-/tmp}/"
}

case "${1:-}" in
prepare | run) "$1" ;;
*) echo "usage: $0 prepare|run" >&2 && exit 2 ;;
esac
