"""Dataclass configs shared by the Python API and the CLI: files (YAML/JSON), `--key=value` overrides, a stable hash.

Dotted keys reach into dict-valued fields: `--im.K=3` sets `cfg.im["K"] = 3`, `--method_args.beta=5`
sets `cfg.method_args["beta"] = 5`. Values are parsed as YAML scalars (3 -> int, 1e-5 -> float, true -> bool).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from robustft.errors import ConfigError


@dataclass
class TrainConfig:
    """Everything that defines a training run; its hash names the run."""

    model: str = "minilm"  # alias, local folder or hub name
    task: str = "sst2"
    train_split: str = "train"
    dev_split: str = "dev"  # model selection happens here, never on test
    n_train: int | None = None  # seeded sample of the training split
    per_class: int | None = None  # or a class-balanced sample
    n_dev: int | None = None
    data_seed: int = 0
    max_length: int = 128
    epochs: int = 3
    batch_size: int = 32
    eval_batch_size: int = 128
    lr: float = 5e-5
    weight_decay: float = 0.01
    warmup_ratio: float = 0.1
    max_grad_norm: float = 1.0
    grad_accum: int = 1
    bf16: bool = True  # autocast to bfloat16 (CPU and GPU)
    group_by_length: bool = True  # batches of similar length, padded to the longest in the batch
    pad_to_max_length: bool = False  # the slow baseline, for benchmarks
    seed: int = 0
    method: str = "standard"  # training objective, see `robustft methods`
    method_args: dict[str, Any] = field(default_factory=dict)
    arch: str = "plain"  # plain | im | ex (IM-BERT / EX-BERT connections)
    im: dict[str, Any] = field(default_factory=dict)
    checkpoint_every: int = 200  # optimizer steps between checkpoints (0: only at epoch ends)
    log_every: int = 20
    device: str = "auto"
    output_dir: str | None = None  # default runs/<task>-<method>-<arch>-<hash8>

    def validate(self) -> TrainConfig:
        positive = ("max_length", "epochs", "batch_size", "eval_batch_size", "grad_accum")
        for name in positive:
            if getattr(self, name) <= 0:
                raise ConfigError(f"{name} must be positive, got {getattr(self, name)}")
        if self.lr <= 0:
            raise ConfigError(f"lr must be positive, got {self.lr}")
        if self.arch not in ("plain", "im", "ex"):
            raise ConfigError(f"arch must be plain, im or ex, got '{self.arch}'")
        if not 0 <= self.warmup_ratio < 1:
            raise ConfigError(f"warmup_ratio must be in [0, 1), got {self.warmup_ratio}")
        return self


# Fields that say where or how often things are written, not what is computed: left out of the hash.
NOT_HASHED = {"output_dir", "checkpoint_every", "log_every", "device", "eval_batch_size"}


def config_hash(cfg) -> str:
    data = {k: v for k, v in dataclasses.asdict(cfg).items() if k not in NOT_HASHED}
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()


def parse_value(text: str) -> Any:
    for number in (int, float):  # YAML 1.1 reads "1e-4" as a string
        try:
            return number(text)
        except ValueError:
            pass
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def read_config_file(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"config file {path} does not exist")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))  # JSON is YAML too
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML/JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of config keys, got {type(data).__name__}")
    return data


def apply_overrides(cfg, values: dict[str, Any], source: str = "override"):
    """Set (possibly dotted) keys on a dataclass config, checking names and coercing simple types."""
    fields = {f.name: f for f in dataclasses.fields(cfg)}
    for key, value in values.items():
        head, _, rest = key.replace("-", "_").partition(".")
        if head not in fields:
            raise ConfigError(f"{source}: unknown config key '{key}'; known keys: {', '.join(fields)}")
        current = getattr(cfg, head)
        if rest:
            if not isinstance(current, dict):
                raise ConfigError(f"{source}: '{head}' is not a group, so '{key}' is not a key")
            current[rest] = value
        elif isinstance(current, dict):
            if not isinstance(value, dict):
                raise ConfigError(f"{source}: '{head}' expects a mapping, got {value!r}")
            current.update(value)
        else:
            setattr(cfg, head, _coerce(head, value, current, fields[head], source))
    return cfg


def _coerce(name, value, current, spec, source):
    annotation = str(spec.type)
    if value is None and "None" in annotation:
        return None
    if "float" in annotation and isinstance(value, str):
        try:
            return float(value)  # YAML files: "1e-4" is a string to YAML 1.1
        except ValueError:
            pass
    if "float" in annotation and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if "int" in annotation and isinstance(value, int) and not isinstance(value, bool):
        return value
    if "bool" in annotation and isinstance(value, bool):
        return value
    if "str" in annotation and not isinstance(value, dict | list):
        return str(value)
    raise ConfigError(f"{source}: '{name}' expects {annotation}, got {value!r}")


def build_config(cls, files: list[str] = (), overrides: list[str] = ()):
    """A config from defaults, then each file in order, then `key=value` overrides."""
    cfg = cls()
    for path in files:
        apply_overrides(cfg, read_config_file(path), source=str(path))
    pairs = {}
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"override '{item}' must look like key=value")
        pairs[key.lstrip("-")] = parse_value(value)
    return apply_overrides(cfg, pairs, source="command line")
