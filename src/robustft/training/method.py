"""A training method, resolved once per run and passed on: its objective class, the preset it applied to the config
and how the run departs from the method's paper (`Method`). The loop, config.json and the log all read this one
resolution; the presets themselves live with their objectives (`Objective.preset`)."""

from __future__ import annotations

from dataclasses import dataclass

from robustft.config import TrainConfig, explicit_keys
from robustft.training.objectives import Objective, check_method_args, objective_class


@dataclass(frozen=True)
class Method:
    name: str
    objective_class: type[Objective]
    applied: dict  # the preset's keys that filled keys the user did not set (method_args: per key)
    deviations: list[str]

    def objective(self, args: dict) -> Objective:
        return self.objective_class(**args)

    def notes(self) -> dict | None:
        """What config.json records beside the config: the preset applied and the method's deviations."""
        notes = {"preset": {"method": self.name, "applied": self.applied}} if self.applied else {}
        return (notes | ({"deviations": self.deviations} if self.deviations else {})) or None

    def preset_line(self) -> str | None:
        """'method pgd: its preset set lr=2e-05, epochs=10, ... (keys you set are kept; ...)', None without one."""
        if not self.applied:
            return None
        parts = [f"{key}={value!r}" for key, value in self.applied.items() if key != "method_args"]
        parts += [f"method_args.{key}={value!r}" for key, value in self.applied.get("method_args", {}).items()]
        kept = "keys you set are kept; set any of these to change it"
        return f"method {self.name}: its preset set {', '.join(parts)} ({kept})"


def resolve_method(cfg: TrainConfig) -> Method:
    """Look the method up, fill the keys the user did not set from its published recipe (e.g. rift-imdb), and check
    its arguments. Explicit keys always win: files, --key, and in Python the keys given to the constructor or
    assigned, even at their default values (`TrainConfig(method="safer", lr=5e-5)` keeps 5e-5). `cfg` is changed
    in place and validated again."""
    cls = objective_class(cfg.method)
    chosen, applied = explicit_keys(cfg), {}
    for key, value in dict(cls.preset(cfg.task)).items():
        if key == "method_args":
            extra = {k: v for k, v in value.items() if k not in cfg.method_args}
            cfg.method_args = {**extra, **cfg.method_args}
            if extra:
                applied[key] = extra
        elif key not in chosen:
            setattr(cfg, key, value)
            applied[key] = value
    cfg.validate()
    check_method_args(cfg.method, cfg.method_args)
    return Method(cfg.method, cls, applied, cls.deviations(cfg))
