"""Checks of a config's values: kind, finiteness, range and choices of every key, with one message naming it."""

from __future__ import annotations

import dataclasses
import math
import os
from pathlib import Path

from robustft.errors import ConfigError

# numpy's and torch's seeds must lie in [0, 2**32): a larger one is an error deep inside a run
MAX_SEED = 2**32 - 1
# More threads than this only oversubscribe the cores; 1e9 made libgomp abort with an out-of-memory message
MAX_THREADS = 4 * (os.cpu_count() or 1)
# Any other whole-number key: counts, sizes and steps beyond this are typing mistakes, and larger ints overflow
# the C integers of torch and the tokenizers (an OverflowError traceback instead of a message)
MAX_COUNT = 2**31 - 1


def validate(cfg) -> None:
    """Types, finiteness, ranges and choices of every field, with one message naming the key. Pure: it reads the
    config alone (nothing registered by other layers); the settings inside a group a higher layer declares (`im`,
    `method_args`, `recipe_args`) and a user's data are checked by the verb that uses them, before it loads data
    (`robustft.verbs.check`)."""
    for f in dataclasses.fields(cfg):
        value, meta = getattr(cfg, f.name), f.metadata
        if value is None:
            continue
        value = check_kind(cfg, f, value)
        check_finite(f.name, value)
        if isinstance(value, int) and not isinstance(value, bool) and meta.get("max") is None and value > MAX_COUNT:
            raise ConfigError(f"{f.name}: must be at most {MAX_COUNT}, got {value}")
        if meta.get("min") is not None and isinstance(value, int | float) and value < meta["min"]:
            raise ConfigError(f"{f.name}: must be at least {meta['min']}, got {value}")
        if meta.get("max") is not None and isinstance(value, int | float) and value > meta["max"]:
            raise ConfigError(f"{f.name}: must be at most {meta['max']}, got {value}")
        if meta.get("choices") is not None and value not in meta["choices"]:
            known = ", ".join(str(c) for c in meta["choices"] if c is not None)
            raise ConfigError(f"{f.name}: expected one of {known}, got {value!r}")
    if getattr(cfg, "model", "present") in (None, ""):
        raise ConfigError("model: a value is required (--model PATH)")
    check_output_dir(getattr(cfg, "output_dir", None))
    for seed in getattr(cfg, "seeds", None) or ():
        if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed <= MAX_SEED:
            raise ConfigError(f"seeds: every seed must be a whole number in 0..{MAX_SEED}, got {seed!r}")
    if getattr(cfg, "shard", None) is not None:
        cfg.shard = "{}/{}".format(*parse_shard(cfg.shard))  # the one spelling ("1 / 4" -> "1/4")


KIND_WORDS = {"int": "a whole number", "float": "a number", "bool": "true or false", "str": "text"}


def check_kind(cfg, spec, value):
    """The value has its key's declared kind (`TrainConfig(epochs="three")` stops here, before any data loads, not
    deep inside a run); a whole float of a whole-number key becomes an int (3.0 -> 3). Returns the value kept."""
    kind, optional = declared_kind(spec)
    whole = isinstance(value, int) and not isinstance(value, bool)
    fits = {
        "str": isinstance(value, str | os.PathLike),
        "int": whole,
        "float": whole or isinstance(value, float),
        "bool": isinstance(value, bool),
        "list": isinstance(value, list | tuple),
        "dict": isinstance(value, dict),
    }.get(kind, True)  # a key of any other kind is checked by its own layer
    if not fits and kind == "int" and isinstance(value, float) and value.is_integer():
        value, fits = int(value), True
        setattr(cfg, spec.name, value)
    if not fits:
        wanted = KIND_WORDS.get(kind, f"a {kind}")
        raise ConfigError(f"{spec.name}: expects {wanted}{' or none' if optional else ''}, got {value!r}")
    return value


def check_finite(where: str, value) -> None:
    """No NaN or infinity anywhere in a value, nested groups included (`--im.eta inf` names `im.eta`)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{where}: must be a finite number, got {value}")
    if isinstance(value, dict):
        for key, item in value.items():
            check_finite(f"{where}.{key}", item)
    elif isinstance(value, list | tuple):
        for item in value:
            check_finite(where, item)


def check_output_dir(value) -> None:
    """robustft never expands '~' (neither does a quoted shell word): a folder literally named '~' would be made in
    the working directory, and a later `rm -rf ~` to clean it up would delete the home folder. An empty one
    (`--output_dir ''`, a shell variable that was not set) would be the working directory itself."""
    if isinstance(value, str) and not value.strip():
        raise ConfigError("output_dir: empty; give a folder, or leave the key out for the default")
    if isinstance(value, str) and value.startswith("~"):
        raise ConfigError(
            f"output_dir: {value!r} starts with '~', which robustft does not expand; write the folder out in full "
            f"(e.g. {Path.home() / value.lstrip('~/')}) or leave it out for the default"
        )


def parse_shard(text) -> tuple[int, int]:
    """'i/n' -> (i, n) with 0 <= i < n; a scheduler array task id is 0-based (--array=0-(n-1))."""
    index, sep, count = str(text).partition("/")
    try:
        i, n = int(index), int(count)
    except ValueError:
        i, n = -1, 0
    if not sep or n < 1 or not 0 <= i < n:
        raise ConfigError(f"shard: expected i/n with 0 <= i < n (e.g. 0/4 ... 3/4), got {text!r}")
    return i, n


def declared_kind(spec) -> tuple[str, bool]:
    """('str' | 'int' | 'float' | 'bool' | 'list' | 'dict', whether None is allowed) of a config field."""
    annotation = str(spec.type)
    optional = "None" in annotation
    base = annotation.replace(" | None", "").replace("None | ", "").strip()
    for kind in ("list", "dict"):
        if base.startswith(kind):
            return kind, optional
    return base, optional
