"""Which trained model a run concerns: its "method" (everything of the training config but the seed) and
its seed, and a short label such as "im+standard" (with the settings that tell apart methods sharing it)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from robustft.errors import ConfigError

BASELINE = ("plain", "standard")  # the default baseline: the unchanged architecture, standard fine-tuning
KSHOT_SPLIT = re.compile(r"kshot(\d+)-train")


@dataclass(frozen=True)
class MethodKey:
    model: str
    task: str
    arch: str
    method: str
    method_args: str  # canonical JSON, so the key is hashable
    im: str
    size: str
    label: str = ""  # the name the run was given (e.g. a bench's method label)

    @property
    def base_label(self) -> str:
        if self.label:
            return self.label
        return f"{self.arch}+{self.method}" if self.arch != "-" else self.model

    @property
    def is_baseline(self) -> bool:
        return (self.arch, self.method) == BASELINE


def _num_labels(task: str) -> int | None:
    from robustft.data.tasks import get_task

    try:
        return get_task(task).num_labels
    except ConfigError:
        return None


def size_of(cfg: dict) -> tuple[str, int | None]:
    """The training-set size as a label and, where the config fixes it, a number of examples."""
    split = cfg.get("train_split") or "train"
    labels = _num_labels(cfg.get("task", ""))
    if KSHOT_SPLIT.fullmatch(split):
        return "16/class", 16 * labels if labels else None
    if cfg.get("per_class"):
        return f"{cfg['per_class']}/class", cfg["per_class"] * labels if labels else None
    if cfg.get("n_train"):
        return f"n={cfg['n_train']}", int(cfg["n_train"])
    return ("all" if split == "train" else split), None


def seed_of(cfg: dict | None) -> str:
    """The seed label: the training seed, the k-shot split's seed, and the data seed of a sampled subset."""
    if not cfg:
        return "-"
    parts = [f"s{cfg.get('seed', 0)}"]
    shot = KSHOT_SPLIT.fullmatch(cfg.get("train_split") or "")
    if shot:
        parts.append(f"k{shot.group(1)}")
    elif (cfg.get("n_train") or cfg.get("per_class")) and cfg.get("data_seed", 0):
        parts.append(f"d{cfg['data_seed']}")
    return "/".join(parts)


def key_of(train_cfg: dict | None, fallback_model: str = "model") -> MethodKey:
    if not train_cfg:  # an evaluation of a model that was not trained here
        return MethodKey(fallback_model, "-", "-", "-", "{}", "{}", "-")
    return MethodKey(
        model=str(train_cfg.get("model", "?")),
        task=str(train_cfg.get("task", "?")),
        arch=str(train_cfg.get("arch", "plain")),
        method=str(train_cfg.get("method", "standard")),
        method_args=json.dumps(train_cfg.get("method_args") or {}, sort_keys=True),
        im=json.dumps(train_cfg.get("im") or {}, sort_keys=True) if train_cfg.get("arch", "plain") != "plain" else "{}",
        size=size_of(train_cfg)[0],
        label=str(train_cfg.get("label") or ""),
    )


def _dict_diff(values: list[str], value: str) -> str:
    """The items of one JSON dict that are not the same in all of `values`."""
    dicts = [json.loads(v) for v in values]
    mine = json.loads(value)
    keys = sorted({k for d in dicts for k in d})
    differing = [k for k in keys if len({json.dumps(d.get(k), sort_keys=True) for d in dicts}) > 1]
    return ",".join(f"{k}={mine[k]}" for k in differing if k in mine)


def labels_for(keys: list[MethodKey]) -> dict[MethodKey, str]:
    """A unique readable label per key: the base label plus whatever sets it apart from keys sharing it."""
    out = {}
    by_base: dict[str, list[MethodKey]] = {}
    for key in keys:
        by_base.setdefault(key.base_label, []).append(key)
    for base, group in by_base.items():
        for key in group:
            extra = []
            for field in ("model", "task", "size", "method_args", "im"):
                values = [getattr(k, field) for k in group]
                if len(set(values)) > 1:
                    value = getattr(key, field)
                    text = _dict_diff(values, value) if field in ("method_args", "im") else value
                    extra.append(text or "default")
            out[key] = f"{base} ({'; '.join(extra)})" if extra else base
        if len(set(out[k] for k in group)) < len(group):  # still ambiguous: number them
            for i, key in enumerate(sorted(group, key=repr)):
                out[key] = f"{out[key]} #{i + 1}"
    return out
