"""Expected wall time of bench jobs on 2 CPU cores with MiniLM, printed before a bench starts.

The rates are rounded from this project's own measurements (benchmarks/results: train_throughput.json for the
loop, objective_cost.json for each method's cost per step, attack_speed.json and the attack runs for seconds per
attacked example), measured on this 2-core machine under load; treat them as the order of magnitude they are.
"""

from __future__ import annotations

from robustft.data.tasks import load_examples

TRAIN_EXAMPLES_PER_S = 60.0  # MiniLM, bf16, length-grouped batches, 2 busy cores
EVAL_EXAMPLES_PER_S = 250.0
METHOD_COST = {"standard": 1.0, "pgd": 4.5, "freelb": 4.6, "freelbpp": 8.0, "trades": 4.3, "ascc": 2.4,
               "rift": 5.3, "infobert": 4.6}  # x standard's step (objective_cost.json)
ATTACK_SECONDS = {"pwws": 1.8, "textfooler": 0.5, "bert-attack": 0.9, "genetic": 18.0, "ascc": 0.2}
LONG_TEXT_FACTOR = {"imdb": 8.0}  # IMDB reviews are ~10x SST-2 sentences


def split_size(task: str, split: str) -> int:
    try:
        return len(load_examples(task, split))
    except Exception:  # a missing split is reported when the job runs; the estimate just leaves it out
        return 0


def train_seconds(cfg) -> float:
    n = cfg.n_train or (cfg.per_class and cfg.per_class * 3) or split_size(cfg.task, cfg.train_split)
    dev = cfg.n_dev or split_size(cfg.task, cfg.dev_split)
    method = cfg.method.split("-")[0]
    im = 1.0 + 0.6 * int(cfg.im.get("K", 2)) if cfg.arch == "im" else 1.0
    length = LONG_TEXT_FACTOR.get(cfg.task, 1.0) * min(cfg.max_length, 128) / 64
    step = METHOD_COST.get(method, 3.0) * im * length / TRAIN_EXAMPLES_PER_S
    return cfg.epochs * (n * step + dev * length / EVAL_EXAMPLES_PER_S)


def job_seconds(job) -> float:
    cfg = job.config
    if job.kind == "train":
        return train_seconds(cfg)
    n = min(cfg.n or 10**9, split_size(cfg.task, cfg.split))
    if job.kind == "eval":
        return n * LONG_TEXT_FACTOR.get(cfg.task, 1.0) / EVAL_EXAMPLES_PER_S
    return n * ATTACK_SECONDS.get(cfg.recipe, 2.0) * LONG_TEXT_FACTOR.get(cfg.task, 1.0)
