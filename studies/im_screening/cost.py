"""What the powered studies cost here: the bench's own estimate (`robustft bench FILE --list`) and the same with
each IM setting's forward cost as the screening measured it instead of as the rates file prices it."""

from __future__ import annotations

from pathlib import Path

from robustft.bench.costs import expected_seconds
from robustft.bench.matrix import expand
from robustft.bench.pricing import im_forward_factor
from robustft.config import BenchConfig, build_config, read_config_file

DEFAULT_IM = {"form": "increment", "dt": 1.0, "layers": "4-6", "solver": "gd", "K": 2}  # TrainConfig's im defaults


def measured_forward(train_cfg, done: dict) -> float | None:
    """The screening's CPU cost of a forward of this IM model, in plain forwards (None: its setting was not
    screened)."""
    setting = {**DEFAULT_IM, **train_cfg.im}
    return next(
        (
            r["cost_x_plain"]
            for r in done.values()
            if r["setting"]["arch"] == "im" and all(r["setting"].get(k) == setting[k] for k in DEFAULT_IM)
        ),
        None,
    )


def im_step(forward: float, grad: str) -> float:
    """A training step of an IM model in plain steps, from its forward's cost r: (r + 2) / 3 with grad explicit or
    jfb (the solver's forwards, then the backward of the explicit step), r with unrolled (the backward runs through
    every iteration)."""
    return forward if grad == "unrolled" else (forward + 2) / 3


def corrected_minutes(config_path: Path, done: dict) -> dict:
    """The bench's estimate per kind of job, and the same with the measured forward cost of its IM models."""
    base = (str(config_path), {"name": config_path.stem, **read_config_file(str(config_path))})
    jobs = expand(build_config(BenchConfig, [], [], base=base))
    models = {j.id: j.config for j in jobs if j.kind == "train"}
    listed = {"train": 0.0, "eval": 0.0, "attack": 0.0}
    corrected = dict(listed)
    unmeasured = set()
    for job, seconds in zip(jobs, expected_seconds(jobs, jobs), strict=True):
        listed[job.kind] += seconds / 60
        model = models[job.cell]
        measured = measured_forward(model, done) if model.arch == "im" else None
        if model.arch == "im" and measured is None:
            unmeasured.add(job.method)
        if measured is not None:
            priced = im_forward_factor(model)
            if job.kind == "train":
                grad = model.im.get("grad", "explicit")
                seconds *= im_step(measured, grad) / im_step(priced, grad)
            else:
                seconds *= measured / priced
        corrected[job.kind] += seconds / 60
    return {
        "jobs": len(jobs),
        "listed_minutes": listed,
        "corrected_minutes": corrected,
        "unmeasured_im_methods": sorted(unmeasured),
    }
