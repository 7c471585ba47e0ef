"""The measured rates a bench prices its jobs with: robustft/assets/bench_rates.json, or the file
ROBUSTFT_BENCH_RATES names (another machine's, measured with benchmarks/job_rates.py --write_rates). Every rate of
a machine is in that file, each saying where and when it was measured; none is a constant here."""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass
from pathlib import Path

from robustft import runtime
from robustft.errors import DataFormatError

RATES_FILE = Path(__file__).resolve().parent.parent.parent / "assets" / "bench_rates.json"
RATES_ENV = "ROBUSTFT_BENCH_RATES"


@dataclass(frozen=True)
class Rates:
    """The measured rates of one machine (see the rates file's entries for their sources)."""

    machine: dict
    train_examples_per_s: float  # standard fine-tuning, length-grouped batches
    eval_examples_per_s: float
    workers_speedup: float  # the work one-thread workers on every core get through against one process
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

    def copy_cost(self, method: str | None) -> float:
        return self.ensemble_distinct.get(method, self.ensemble_copy)

    def method(self, name: str, short_text: bool) -> float:
        costs = {**self.method_cost, **(self.short_text_method_cost if short_text else {})}
        return costs.get(name, self.method_cost["default"])

    def backbone(self, model: str) -> float:
        """A forward (and a training step) of `model`'s backbone against MiniLM's, which every other rate is for:
        the alias's measured factor, else the default (1: a folder or hub name is priced as MiniLM)."""
        return self.backbones.get(str(model), self.backbones.get("default", 1.0))


def read_rates(path: Path) -> Rates:
    """The rates of a rates file; a missing or malformed entry is named with the file."""
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
        return Rates(
            machine=raw["machine"],
            train_examples_per_s=float(raw["train"]["examples_per_s"]["value"]),
            eval_examples_per_s=float(raw["eval"]["examples_per_s"]["value"]),
            workers_speedup=float(raw["workers_speedup"]["value"]),
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
    defaults = {"methods": rates.method_cost, "attacks": rates.attack_seconds, "im_iteration": rates.im_iteration}
    for group, values in defaults.items():
        if "default" not in values:
            raise DataFormatError(path, None, f"{group}: needs a 'default' entry (the price of an unmeasured one)")
    return rates


def load_rates() -> Rates:
    """The rates in use: ROBUSTFT_BENCH_RATES's file where it is set, the shipped one otherwise."""
    return cached_rates(os.environ.get(RATES_ENV) or str(RATES_FILE))


def slowdown(threads: int | None, rates: Rates | None = None) -> float:
    """How much longer than the one-process estimate a job with `threads` CPU threads takes on this machine: its
    share of the cores over the rates file's `workers_speedup`."""
    if not threads:
        return 1.0
    return max(1.0, runtime.cpu_cores() / threads / (rates or load_rates()).workers_speedup)
