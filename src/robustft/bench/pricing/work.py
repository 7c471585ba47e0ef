"""What a bench job does, in the plain numbers its price depends on, and its expected seconds as one process on
every core of the machine the rates were measured on. A trained model that is more robust takes longer per attacked
example (more failed searches), so treat a price as the order of magnitude it is."""

from __future__ import annotations

from dataclasses import dataclass, field

from robustft.bench.pricing.rates import Rates, load_rates


@dataclass(frozen=True)
class Model:
    """The model a training trains, or an evaluation or attack queries."""

    method: str  # e.g. 'rift-snli': its first part names the measured cost
    backbone: str = "minilm"
    arch: str = "plain"
    im: dict = field(default_factory=dict)  # layers, K, solver, grad of an IM model
    copies: int = 1  # noisy copies each prediction of an ensemble defense votes over (SAFER, RanMASK, DNE)


@dataclass(frozen=True)
class Work:
    kind: str  # train | eval | attack
    task: str
    examples: int  # a training's examples an epoch; an evaluation's or attack's examples
    model: Model | None  # None: a model not trained here
    epochs: int = 1
    dev_examples: int = 0  # a training's dev pass each epoch
    ascent_steps: int | None = None  # a training's adversary steps (preset or the objective's default)
    max_length: int = 128
    group_by_length: bool = True
    fp32: bool = False
    certify_samples: int = 0  # an evaluation's certificate: more noisy copies of each example
    recipe: str | None = None  # an attack's

    @property
    def units(self) -> int:
        """What a partly run job counts done: a training's examples over all its epochs, an attack's examples."""
        return self.epochs * self.examples


def im_forward_factor(model, rates: Rates | None = None) -> float:
    """A forward of `model` (anything with `arch` and `im`, a TrainConfig too) in plain forwards (1 unless IM)."""
    if model.arch != "im":
        return 1.0
    rates = rates or load_rates()
    share = 1.0 if str(model.im.get("layers", "upper-half")) == "all" else 0.5
    iteration = rates.im_iteration.get(model.im.get("solver", "gd"), rates.im_iteration["default"])
    return 1.0 + share * int(model.im.get("K", 2)) * iteration


def length_factor(work: Work, rates: Rates) -> float:
    """A long-text task's cost per example against a short text's: batches are padded to their longest example, so
    max_length costs only where texts reach it (on SST-2 a max_length of 128 trained at the speed of 64)."""
    if work.task not in rates.long_text:
        return 1.0
    factor, longest = rates.long_text[work.task]
    return factor * min(work.max_length, longest) / rates.reference_length


def step_seconds(work: Work, rates: Rates) -> float:
    """Seconds of one training example: its method's cost per step, more ascent steps than it was measured at, an
    IM model's solves, long texts, padding and precision."""
    model = work.model
    method = model.method.split("-")[0]
    forward = im_forward_factor(model, rates)
    # a step with the explicit (or jfb) gradient: the solve's forwards, then the backward of one step; implicit and
    # adaptive measured 0.6-0.9x unrolled's step (benchmarks/results/im_gradient_fidelity.json): priced at
    # unrolled's, an upper bound
    im = (forward + 2) / 3 if model.im.get("grad") in ("explicit", "jfb") else forward
    padding = 1.0 if work.group_by_length else rates.random_batch_padding
    measured = rates.measured_steps.get(method)
    ascent = (work.ascent_steps or measured) / measured if measured else 1.0
    cost = rates.method(method, short_text=work.task not in rates.long_text)
    step = cost * ascent * im * rates.backbone(model.backbone) * length_factor(work, rates) * padding
    return step / rates.train_examples_per_s * (rates.fp32_train_factor if work.fp32 else 1.0)


def forward_cost(work: Work, rates: Rates) -> float:
    """One forward of the evaluated or attacked model in plain short-text MiniLM forwards: its task's text length,
    the model's backbone and IM solves."""
    long_text = rates.long_text[work.task][0] if work.task in rates.long_text else 1.0
    if work.model is None:
        return long_text
    return long_text * im_forward_factor(work.model, rates) * rates.backbone(work.model.backbone)


def prediction_cost(work: Work, rates: Rates) -> float:
    """One prediction of the model in plain short-text forwards (an ensemble's copies included)."""
    copies = work.model.copies if work.model is not None else 1
    if copies == 1:
        return forward_cost(work, rates)
    return forward_cost(work, rates) * copies * rates.copy_cost(work.model.method)


def seconds(work: Work, rates: Rates | None = None) -> float:
    """Expected seconds of a train, eval or attack job as one process on every core."""
    rates = rates or load_rates()
    if work.kind == "train":
        forward = im_forward_factor(work.model, rates) * rates.backbone(work.model.backbone)
        dev = work.dev_examples * forward * length_factor(work, rates) / rates.eval_examples_per_s
        return work.epochs * (work.examples * step_seconds(work, rates) + dev)
    cost = prediction_cost(work, rates)
    if work.kind == "eval":
        copy = rates.copy_cost(work.model.method if work.model is not None else None)
        certificate = work.certify_samples * copy * forward_cost(work, rates)
        return work.examples * (cost + certificate) / rates.eval_examples_per_s
    per_example = rates.attack_seconds.get(work.recipe, rates.attack_seconds["default"])
    return work.examples * per_example * cost * (rates.attack_fp32_factor if work.fp32 else 1.0)
