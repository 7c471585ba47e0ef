"""What a bench job costs: its expected seconds as one process on every core of the machine its rates were measured
on, priced from a file of measured rates (robustft/assets/bench_rates.json, or the file ROBUSTFT_BENCH_RATES names),
never from constants in the code. Each rate in that file says where and when it was measured; a trained model that
is more robust takes longer per attacked example (more failed searches), so treat a price as the order of magnitude
it is. The bench scales prices to the machine it runs on (bench/calibrate.py) and prices a partly run job at its own
rate (bench/progress.py)."""

from __future__ import annotations

import copy
import functools
import inspect
import json
import os
from dataclasses import dataclass
from pathlib import Path

from robustft.data.tasks import load_examples
from robustft.errors import DataFormatError
from robustft.training.loop import apply_preset
from robustft.training.objectives.base import OBJECTIVES

RATES_FILE = Path(__file__).resolve().parent.parent / "assets" / "bench_rates.json"
RATES_ENV = "ROBUSTFT_BENCH_RATES"


@dataclass(frozen=True)
class Rates:
    """The measured rates of one machine (see the rates file's entries for their sources)."""

    machine: dict
    train_examples_per_s: float  # standard fine-tuning, length-grouped batches
    eval_examples_per_s: float
    fp32_train_factor: float
    random_batch_padding: float  # tokens per real token when batches are not grouped by length
    reference_length: int  # the max_length a long-text task's factor is for
    method_cost: dict[str, float]  # x standard's step; 'default' for a method never measured
    measured_steps: dict[str, int]  # the ascent steps each adversary's cost was measured at
    short_text_method_cost: dict[str, float]
    long_text: dict[str, tuple[float, int]]  # task: (x a short-text example at reference_length, longest priced)
    attack_seconds: dict[str, float]  # per attacked (or skipped) example; 'default' for an unmeasured recipe
    attack_fp32_factor: float
    im_iteration: dict[str, float]  # one solver iteration per converted layer, in plain forwards
    backbones: dict[str, float]  # a backbone's forward and step against MiniLM's; 'default' for an unmeasured one
    ensemble_copy: float  # one noisy copy of an ensemble defense's prediction, in plain predictions
    # the same for a defense whose copies are forwarded once per distinct copy (SAFER, RanMASK: token ids only)
    ensemble_distinct: dict[str, float]

    def copy_cost(self, method: str) -> float:
        return self.ensemble_distinct.get(method, self.ensemble_copy)

    def method(self, name: str, short_text: bool) -> float:
        costs = {**self.method_cost, **(self.short_text_method_cost if short_text else {})}
        return costs.get(name, self.method_cost["default"])


def read_rates(path: Path) -> Rates:
    """The rates of a rates file; a missing or malformed entry is named with the file."""
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
        return Rates(
            machine=raw["machine"],
            train_examples_per_s=float(raw["train"]["examples_per_s"]["value"]),
            eval_examples_per_s=float(raw["eval"]["examples_per_s"]["value"]),
            fp32_train_factor=float(raw["train"]["fp32_factor"]["value"]),
            random_batch_padding=float(raw["train"]["random_batch_padding"]["value"]),
            reference_length=int(raw["train"]["reference_length"]["value"]),
            method_cost={k: float(v["cost"]) for k, v in raw["methods"].items()},
            measured_steps={k: int(v["steps"]) for k, v in raw["methods"].items() if v.get("steps")},
            short_text_method_cost={k: float(v["cost"]) for k, v in raw["short_text_methods"].items()},
            long_text={k: (float(v["value"]), int(v["max_length"])) for k, v in raw["long_text"].items()},
            attack_seconds={k: float(v["seconds_per_example"]) for k, v in raw["attacks"].items()},
            attack_fp32_factor=float(raw["attack_fp32_factor"]["value"]),
            im_iteration={k: float(v["value"]) for k, v in raw["im_iteration"].items()},
            backbones={k: float(v["value"]) for k, v in raw.get("backbones", {}).items()},
            ensemble_copy=float(raw.get("ensemble_copy", {}).get("value", 1.0)),
            ensemble_distinct={k: float(v) for k, v in raw.get("ensemble_copy", {}).get("distinct", {}).items()},
        )
    except OSError as exc:
        raise DataFormatError(path, None, f"cannot read the bench's rates: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise DataFormatError(path, None, f"not a rates file (JSON): {exc}") from None
    except (KeyError, TypeError) as exc:
        raise DataFormatError(path, None, f"a rates file needs the entry {exc} (see {RATES_FILE.name})") from None


@functools.cache
def cached_rates(path: str) -> Rates:
    rates = read_rates(Path(path))
    for group, values in (("methods", rates.method_cost), ("attacks", rates.attack_seconds)):
        if "default" not in values:
            raise DataFormatError(path, None, f"{group}: needs a 'default' entry (the price of an unmeasured one)")
    if "default" not in rates.im_iteration:
        raise DataFormatError(path, None, "im_iteration: needs a 'default' entry (the price of an unmeasured solver)")
    return rates


def load_rates() -> Rates:
    """The rates in use: ROBUSTFT_BENCH_RATES's file where it is set (another machine's, measured with
    benchmarks/job_rates.py --write_rates), the shipped one otherwise."""
    return cached_rates(os.environ.get(RATES_ENV) or str(RATES_FILE))


def backbone_factor(model: str, rates: Rates) -> float:
    """A forward (and a training step) of `model`'s backbone against MiniLM's, which every other rate is for: the
    alias's measured factor, else the default (1: a folder or hub name is priced as MiniLM)."""
    return rates.backbones.get(str(model), rates.backbones.get("default", 1.0))


def im_forward_factor(train_cfg, rates: Rates | None = None) -> float:
    """A forward of the trained model in plain forwards (1 for a plain or EX model)."""
    if train_cfg.arch != "im":
        return 1.0
    rates = rates or load_rates()
    im = train_cfg.im
    share = 1.0 if str(im.get("layers", "upper-half")) == "all" else 0.5
    iteration = rates.im_iteration.get(im.get("solver", "gd"), rates.im_iteration["default"])
    return 1.0 + share * int(im.get("K", 2)) * iteration


def ensemble_copies(train_cfg) -> int:
    """How many noisy copies answer each prediction of the model `train_cfg` trains: an objective with a `copies`
    argument (SAFER, RanMASK, DNE) predicts by an ensemble of that many; 1 for every other model."""
    cfg = with_preset(train_cfg)
    default = inspect.signature(OBJECTIVES[cfg.method].__init__).parameters.get("copies")
    return 1 if default is None else int(cfg.method_args.get("copies", default.default))


def split_size(task: str, split: str) -> int:
    try:
        return len(load_examples(task, split))
    except Exception:  # a missing split is reported when the job runs; the price just leaves it out
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


def length_factor(cfg, rates: Rates) -> float:
    """A long-text task's cost per example against a short text's: batches are padded to their longest example, so
    max_length costs only where texts reach it (on SST-2 a max_length of 128 trained at the speed of 64)."""
    if cfg.task not in rates.long_text:
        return 1.0
    factor, longest = rates.long_text[cfg.task]
    return factor * min(cfg.max_length, longest) / rates.reference_length


def step_seconds(cfg, rates: Rates) -> float:
    """Seconds of one training example of `cfg` (preset applied): its method's cost per step, more ascent steps
    than it was measured at, an IM model's solves, long texts, padding and precision."""
    method = cfg.method.split("-")[0]
    forward = im_forward_factor(cfg, rates)
    # a step with the explicit (or jfb) gradient: the solve's forwards, then the backward of one step; implicit and
    # adaptive measured 0.6-0.9x unrolled's step (benchmarks/results/im_gradient_fidelity.json): priced at
    # unrolled's, an upper bound
    im = (forward + 2) / 3 if cfg.im.get("grad") in ("explicit", "jfb") else forward
    padding = 1.0 if cfg.group_by_length else rates.random_batch_padding
    measured = rates.measured_steps.get(method)
    ascent = (cfg.method_args.get("steps") or measured) / measured if measured else 1.0
    cost = rates.method(method, short_text=cfg.task not in rates.long_text)
    backbone = backbone_factor(cfg.model, rates)
    step = cost * ascent * im * backbone * length_factor(cfg, rates) * padding / rates.train_examples_per_s
    return step * (rates.fp32_train_factor if cfg.wanted_precision == "fp32" else 1.0)


def train_seconds(cfg, rates: Rates | None = None) -> float:
    rates = rates or load_rates()
    cfg = with_preset(cfg)
    dev = cfg.n_dev or split_size(cfg.task, cfg.dev_split)
    forward = im_forward_factor(cfg, rates) * backbone_factor(cfg.model, rates)
    dev_seconds = dev * forward * length_factor(cfg, rates) / rates.eval_examples_per_s
    return cfg.epochs * (train_size(cfg) * step_seconds(cfg, rates) + dev_seconds)


def forward_cost(task: str, train_cfg, rates: Rates) -> float:
    """One forward of an evaluated or attacked example's model in plain short-text MiniLM forwards: its task's text
    length, the model's backbone and IM solves (`train_cfg`: the model's training config, None for a model not
    trained here). An ensemble defense's prediction is `ensemble_copies` of these."""
    long_text = rates.long_text[task][0] if task in rates.long_text else 1.0
    if train_cfg is None:
        return long_text
    return long_text * im_forward_factor(train_cfg, rates) * backbone_factor(train_cfg.model, rates)


def prediction_cost(task: str, train_cfg, rates: Rates) -> float:
    """One prediction of the model in plain short-text forwards (an ensemble's copies included)."""
    copies = ensemble_copies(train_cfg) if train_cfg is not None else 1
    if copies == 1:
        return forward_cost(task, train_cfg, rates)
    return forward_cost(task, train_cfg, rates) * copies * rates.copy_cost(train_cfg.method)


def seconds(kind: str, cfg, train_cfg=None, rates: Rates | None = None) -> float:
    """Expected seconds of a train, eval or attack run of `cfg` (`train_cfg`: the model an eval or attack uses)."""
    rates = rates or load_rates()
    if kind == "train":
        return train_seconds(cfg, rates)
    n = examples_of(cfg)
    cost = prediction_cost(cfg.task, train_cfg, rates)
    if kind == "eval":
        # a certificate counts the votes of certify_samples more noisy copies of each example
        copy = rates.copy_cost(train_cfg.method) if train_cfg is not None else rates.ensemble_copy
        certificate = cfg.certify_samples * copy * forward_cost(cfg.task, train_cfg, rates)
        return n * (cost + (certificate if cfg.certify else 0.0)) / rates.eval_examples_per_s
    precision = rates.attack_fp32_factor if cfg.precision == "fp32" else 1.0
    per_example = rates.attack_seconds.get(cfg.recipe, rates.attack_seconds["default"])
    return n * per_example * cost * precision


def job_seconds(job, train_cfg=None, rates: Rates | None = None) -> float:
    """Expected seconds of a bench job; `train_cfg` is the config of the model an eval or attack job uses."""
    return seconds(job.kind, job.config, train_cfg, rates)


def expected_seconds(jobs: list, all_jobs: list, rates: Rates | None = None) -> list[float]:
    """Each job's expected seconds (evaluations and attacks priced by the forward cost of the model they use, found
    among `all_jobs`)."""
    trained = {j.id: j.config for j in all_jobs if j.kind == "train"}
    return [job_seconds(j, trained.get(j.cell), rates) for j in jobs]
