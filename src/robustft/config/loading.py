"""Building a config: defaults, then files, then `--key value` overrides, each value read as its key's declared
type; old flag spellings mapped with a warning; which keys the user chose is recorded."""

from __future__ import annotations

import dataclasses
import difflib
import math
import warnings
from pathlib import Path
from typing import Any

import yaml

from robustft.config.checks import declared_kind
from robustft.config.fields import RunSettings
from robustft.errors import ConfigError


class CommandLineText(str):
    """A value as typed on the command line, not yet read: `apply_overrides` reads it as its key's declared type."""


NULL_WORDS = ("none", "null", "~")
TRUE_WORDS = ("true", "yes", "on", "1")
FALSE_WORDS = ("false", "no", "off", "0")


def parse_value(text: str) -> Any:
    """A YAML-ish reading of a value (for dotted keys, list and dict keys): numbers (1e-4 too), null, bools, YAML."""
    number = read_number(text)  # YAML 1.1 reads "1e-4" as a string
    if number is not None:
        return number
    if text.lower() in NULL_WORDS:
        return None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def read_text(name: str, text: str, spec, source: str) -> Any:
    """A command-line value read as the type its key declares, not as YAML guesses it: `--output_dir '~'`,
    `--label yes` and `--task 1e3` stay strings; `--seed 1e3` is 1000; `--epochs three` is an error naming the key."""
    kind, optional = declared_kind(spec)
    if kind == "str":
        return str(text)
    lowered = text.strip().lower()
    if kind == "list" and str(spec.type).startswith("list[str]") and not text.lstrip().startswith("["):
        return str(text)  # one item of a list of strings (`--models NAME=PATH`), as typed
    if kind in ("list", "dict"):
        return parse_value(text)
    if optional and lowered in NULL_WORDS:
        return None
    if kind == "bool" and lowered in TRUE_WORDS + FALSE_WORDS:
        return lowered in TRUE_WORDS
    number = read_number(text)
    if kind == "float" and number is not None:
        return float(number)
    if kind == "int" and isinstance(number, int):
        return number
    if kind == "int" and isinstance(number, float) and math.isfinite(number) and number.is_integer():
        return int(number)  # 1e3
    wanted = {"int": "a whole number", "float": "a number", "bool": "true or false"}.get(kind, kind)
    raise ConfigError(f"{source}: '{name}' expects {wanted}{' or none' if optional else ''}, got {text!r}")


def read_number(text: str) -> int | float | None:
    for number in (int, float):
        try:
            return number(text)
        except ValueError:
            pass
    return None


def read_config_file(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file {path} does not exist")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))  # JSON is YAML too
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid YAML/JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of config keys, got {type(data).__name__}")
    return data


# Old flags -> (new key, how the value changes). They still work, with a warning.
LEGACY = {
    "no_plots": ("plots", lambda v: not v),  # report's
    "bf16": ("precision", lambda v: "bf16" if v else "fp32"),
    "no_bf16": ("precision", lambda v: "fp32" if v else None),
    "num_examples": ("n", None),
    "out": ("output_dir", None),
    "output": ("output_dir", None),
    "no_progress": ("progress", lambda v: not v),
    "quiet": ("progress", lambda v: not v),
    "model": ("models", None),
}


def _legacy(key: str, value: Any, fields: dict, source: str) -> tuple[str, Any]:
    """Map an old flag spelling to the current key (with a warning), or return the key unchanged."""
    head, dot, rest = key.partition(".")
    if head == "set" and dot:  # attack's old `--set k=v`
        return f"recipe_args.{rest}", value
    if isinstance(value, CommandLineText) and head.replace("-", "_") in LEGACY and LEGACY[head.replace("-", "_")][1]:
        value = parse_value(value)  # an old flag's converter reads a bool, as before
    spelled = head.replace("-", "_")
    if spelled != head:
        warnings.warn(f"{source}: '--{head}' is the old spelling; use '--{spelled}'", FutureWarning, stacklevel=4)
    if spelled not in fields and spelled in LEGACY:
        new, convert = LEGACY[spelled]
        if new in fields:
            warnings.warn(f"{source}: '--{head}' is replaced by '--{new}'", FutureWarning, stacklevel=4)
            return new + dot + rest, convert(value) if convert else value
    return spelled + dot + rest, value


def apply_overrides(
    cfg, values: dict[str, Any] | list[tuple[str, Any]], source: str = "override", explicit: set | None = None
):
    """Set (possibly dotted) keys on a dataclass config, checking names and coercing simple types.

    A repeated key of a list field (`--models a --models b`) appends; of any other field, the last one wins."""
    fields = {f.name: f for f in dataclasses.fields(cfg)}
    lists_seen: set[str] = set()
    for raw_key, raw_value in values.items() if isinstance(values, dict) else values:
        if raw_key == "explicit_keys" and isinstance(raw_value, set):  # `cfg.__dict__` as values: bookkeeping
            continue
        key, value = _legacy(raw_key, raw_value, fields, source)
        head, _, rest = key.partition(".")
        if head not in fields:
            raise ConfigError(f"{source}: unknown config key '{raw_key}'{did_you_mean(head, fields)}")
        if explicit is not None:
            explicit.add(head)
        current = getattr(cfg, head)
        if isinstance(value, CommandLineText):
            value = parse_value(value) if rest else read_text(head, value, fields[head], source)
        if rest:
            if not isinstance(current, dict):
                raise ConfigError(f"{source}: '{head}' is not a group, so '{key}' is not a key")
            current[rest] = value
        elif isinstance(current, dict):
            if not isinstance(value, dict):
                raise ConfigError(f"{source}: '{head}' expects a mapping, got {value!r}")
            if not value and isinstance(raw_value, CommandLineText):  # `--methods '{}'` was silently a no-op
                raise ConfigError(f"{source}: '{head}' {{}} changes nothing (a group's keys are merged into it)")
            current.update(value)
        elif isinstance(current, list):
            items = value if isinstance(value, list) else [value]
            setattr(cfg, head, (current if head in lists_seen else []) + items)
            lists_seen.add(head)
        else:
            setattr(cfg, head, _coerce(head, value, fields[head], source))
    return cfg


def did_you_mean(name: str, known) -> str:
    """'; did you mean 'epochs'?' for a misspelled key, else the list of known keys."""
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else f"; known keys: {', '.join(known)}"


def _coerce(name, value, spec, source):
    annotation = str(spec.type)
    if value is None and ("None" in annotation or spec.default is None):
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
    if "int" in annotation and isinstance(value, float) and value.is_integer() and "float" not in annotation:
        return int(value)
    if "bool" in annotation and isinstance(value, bool):
        return value
    if "str" in annotation and not isinstance(value, dict | list | bool) and value is not None:
        return str(value)
    raise ConfigError(f"{source}: '{name}' expects {annotation.replace(' | None', ' or none')}, got {value!r}")


def parse_pairs(overrides: list[str]) -> list[tuple[str, Any]]:
    pairs = []
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"override '{item}' must look like key=value")
        pairs.append((key.lstrip("-"), CommandLineText(value)))
    return pairs


def build_config(cls, files: list[str] = (), overrides: list[str] = (), base: tuple[str, dict] | None = None):
    """A validated config from defaults, then `base` (a preset: its name and values), then each file in order,
    then `key=value` overrides.

    The keys set by a file or an override are kept in `cfg.explicit_keys` (a method preset fills only the others).
    """
    cfg, explicit = cls(), set()
    if base is not None:
        apply_overrides(cfg, base[1], source=f"preset {base[0]}", explicit=explicit)
    for path in files:
        apply_overrides(cfg, read_config_file(path), source=str(path), explicit=explicit)
    apply_overrides(cfg, parse_pairs(list(overrides)), source="command line", explicit=explicit)
    cfg.explicit_keys = explicit
    return cfg.validate()


def copy_config(cfg, **changes):
    """`dataclasses.replace(cfg, **changes)` that keeps which keys were chosen (and counts the changed ones)."""
    copied = dataclasses.replace(cfg, **changes)
    copied.explicit_keys = explicit_keys(cfg) | set(changes)
    return copied


def explicit_keys(cfg) -> set[str]:
    """Keys the user chose: those recorded by `build_config`, else those that differ from the defaults."""
    if hasattr(cfg, "explicit_keys"):
        return set(cfg.explicit_keys)
    default = type(cfg)()
    return {f.name for f in dataclasses.fields(cfg) if getattr(cfg, f.name) != getattr(default, f.name)}


def describe_keys(cls) -> str:
    """`--help` text: every key with its default and what it means."""
    lines, common = [], {f.name for f in dataclasses.fields(RunSettings)}
    fields = dataclasses.fields(cls)
    for f in [f for f in fields if f.name not in common] + [f for f in fields if f.name in common]:
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        text = f.metadata.get("help", "")
        # a help that states its own default ("(default: the trained run's)", "off by default") gets no second one
        lines.append(f"  --{f.name:<20} {text}" + ("" if "default" in text else f" (default {default!r})"))
    return "\n".join(lines)
