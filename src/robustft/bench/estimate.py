"""Expected wall time of bench jobs on 2 CPU cores with MiniLM, printed before a bench starts.

The rates are rounded from this project's own measurements (benchmarks/results: train_throughput.json and the quick
bench for the loop, objective_cost.json for each method's cost per step, the attack_outcomes_*.json runs for seconds
per attacked-or-skipped example, docs/im_screening for the cost of an IM forward). Objective costs and attack rates
were measured on a quiet machine (2026-11-30: bf16, two threads, the quick bench's BERT, SST-2 test); a more robust
model takes longer per example (more failed searches). Treat them as the order of magnitude they are; a bench
scales them to the machine it runs on from that machine's finished jobs (bench/calibrate.py).
"""

from __future__ import annotations

import copy

from robustft.data.tasks import load_examples
from robustft.training.loop import apply_preset

TRAIN_EXAMPLES_PER_S = 100.0  # MiniLM, bf16, length-grouped batches, 2 cores (the quick bench: 115/s incl. dev)
EVAL_EXAMPLES_PER_S = 250.0
METHOD_COST = {
    "standard": 1.0,
    "pgd": 4.35,
    "freelb": 5.5,
    "freelbpp": 11.35,
    "trades": 4.9,
    "ascc": 5.3,
    "rift": 8.4,
    "infobert": 3.8,
}  # x standard's step (objective_cost.json: IMDB, 128 tokens, quiet)
# The ascent steps each of those costs was measured at (each objective's default); a preset that takes more, such as
# TextDefender's 30 FreeLB++ steps on SST-2, costs that many times more: each step is a forward and a backward
# (rift-1000, 2026-12-02: FreeLB++ at 30 steps ran about 3x its 10-step estimate)
MEASURED_STEPS = {"pgd": 5, "freelb": 5, "freelbpp": 10, "trades": 5, "ascc": 5, "infobert": 3}
# On short texts a standard step is so cheap that RIFT's fixed costs weigh more: SST-2 in the quick bench, 257 s
# against standard's 26 s.
SHORT_TEXT_METHOD_COST = {"rift": 10.0}
# s per example: PWWS 0.31, TextFooler 0.15 (1,000 examples, eight at once), genetic 4.6 (150, one at a time),
# BERT-Attack ~0.5 (20, one thread)
ATTACK_SECONDS = {"pwws": 0.31, "textfooler": 0.15, "bert-attack": 0.5, "genetic": 4.6, "ascc": 0.2}
# fp32 attacks against the bf16 rates above: PWWS 0.485 vs 0.335 s per example (1,000 SST-2 test examples, two
# threads; attack_outcomes_pwws1000.json), TextFooler 0.30 vs 0.21 at one thread (attack_speed_textfooler_one_thread)
FP32_ATTACK_FACTOR = 1.45
# fp32 training against the bf16 rate above on a CPU with native bf16: 46-49 vs 66-69 examples/s
# (benchmarks/results/train_throughput.json)
FP32_TRAIN_FACTOR = 1.4
LONG_TEXT_FACTOR = {"imdb": 8.0}  # IMDB reviews are ~10x SST-2 sentences
# Random batches (group_by_length false) padded to their longest example: tokens per real token, measured on the
# SST-2 and SNLI training subsets with MiniLM's tokenizer (2.02 / 1.80 at batch 32, 2.27 / 2.13 at 120; grouped: 1.03)
RANDOM_BATCH_PADDING = 2.0
# Cost of one IM solver iteration per converted layer, in plain forwards of the whole model x its layer count
# (docs/im_screening.md: gd K 10 on half the layers 10.5x, anderson K 10 on half 7.3x, on all layers 12x).
IM_ITERATION_COST = {"gd": 1.9, "gd-backtracking": 4.8, "anderson": 1.3}


def im_forward_factor(train_cfg) -> float:
    """A forward of the trained model in plain forwards (1 for a plain or EX model)."""
    if train_cfg.arch != "im":
        return 1.0
    im = train_cfg.im
    share = 1.0 if str(im.get("layers", "upper-half")) == "all" else 0.5
    return 1.0 + share * int(im.get("K", 2)) * IM_ITERATION_COST.get(im.get("solver", "gd"), 2.0)


def split_size(task: str, split: str) -> int:
    try:
        return len(load_examples(task, split))
    except Exception:  # a missing split is reported when the job runs; the estimate just leaves it out
        return 0


def with_preset(cfg):
    """A copy of a training config with its method's preset applied (e.g. RIFT's 20 release epochs)."""
    cfg = copy.deepcopy(cfg)
    apply_preset(cfg)
    return cfg


def train_size(cfg) -> int:
    """Training examples an epoch of `cfg` (preset applied) goes through."""
    return cfg.n_train or (cfg.per_class and cfg.per_class * 3) or split_size(cfg.task, cfg.train_split)


def examples_of(cfg) -> int:
    """Examples an evaluation or attack config goes through."""
    return min(cfg.n or 10**9, split_size(cfg.task, cfg.split))


def train_seconds(cfg) -> float:
    cfg = with_preset(cfg)
    n = train_size(cfg)
    dev = cfg.n_dev or split_size(cfg.task, cfg.dev_split)
    method = cfg.method.split("-")[0]
    forward = im_forward_factor(cfg)
    # a step with the explicit (or jfb) gradient: the solve's forwards, then the backward of one step
    im = forward if cfg.im.get("grad") == "unrolled" else (forward + 2) / 3
    # batches are padded to their longest example, so max_length costs only where texts reach it: on SST-2 a
    # max_length of 128 trained at the speed of 64 (im-powered 2026-12-01: 122 examples/s on one thread)
    length = LONG_TEXT_FACTOR[cfg.task] * min(cfg.max_length, 128) / 64 if cfg.task in LONG_TEXT_FACTOR else 1.0
    padding = 1.0 if cfg.group_by_length else RANDOM_BATCH_PADDING
    costs = METHOD_COST if cfg.task in LONG_TEXT_FACTOR else {**METHOD_COST, **SHORT_TEXT_METHOD_COST}
    measured = MEASURED_STEPS.get(method)
    ascent = (cfg.method_args.get("steps") or measured) / measured if measured else 1.0
    step = costs.get(method, 3.0) * ascent * im * length * padding / TRAIN_EXAMPLES_PER_S
    step *= FP32_TRAIN_FACTOR if cfg.wanted_precision == "fp32" else 1.0
    return cfg.epochs * (n * step + dev * forward * length / EVAL_EXAMPLES_PER_S)


def job_seconds(job, train_cfg=None) -> float:
    """Expected seconds of a job; `train_cfg` is the config of the model an eval or attack job uses."""
    return seconds(job.kind, job.config, train_cfg)


def seconds(kind: str, cfg, train_cfg=None) -> float:
    """Expected seconds of a train, eval or attack run of `cfg` (`train_cfg`: the model an eval or attack uses)."""
    if kind == "train":
        return train_seconds(cfg)
    n = examples_of(cfg)
    cost = LONG_TEXT_FACTOR.get(cfg.task, 1.0) * (im_forward_factor(train_cfg) if train_cfg else 1.0)
    if kind == "eval":
        return n * cost / EVAL_EXAMPLES_PER_S
    precision = FP32_ATTACK_FACTOR if cfg.precision == "fp32" else 1.0
    return n * ATTACK_SECONDS.get(cfg.recipe, 2.0) * cost * precision
