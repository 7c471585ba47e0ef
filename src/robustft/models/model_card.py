"""README.md for a saved model folder: what the model is, how it was trained, what it scored, how to load it.

    write_model_card(run_dir / "best", {"method": "rift-snli", "task": "snli", "base_model": "minilm",
                                        "train_split": "train", "n_train": 1000, "seed": 0,
                                        "dev": {"accuracy": 0.543, "n": 300}, "robustness": {...}})

The IM/EX settings come from the folder's own config.json (`im`), so the card cannot disagree with the
weights. Figures appear only when `info` gives them; nothing is filled in by guess.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from robustft.atomic import atomic_write_text
from robustft.models.im_settings import base_model_type

# info keys shown in the card's first table, in this order; any other key goes under "Other run details"
KNOWN = (
    "method",
    "method_args",
    "base_model",
    "task",
    "train_split",
    "n_train",
    "per_class",
    "data_seed",
    "seed",
    "epochs",
    "max_length",
    "run",
    "config_hash",
    "robustft",
)


def write_model_card(folder: str | Path, info: dict[str, Any]) -> Path:
    """Write `folder/README.md` from `info` and the folder's config.json; returns the path written."""
    folder = Path(folder)
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    im = config.get("im") or None
    base_type = base_model_type(config.get("model_type")) or config.get("model_type", "unknown")
    labels = config.get("id2label") or {}
    label_names = [labels[k] for k in sorted(labels, key=int)] if labels else []
    arch = "plain" if im is None else im.get("arch", "im")
    title = {"plain": "", "im": "IM-", "ex": "EX-"}[arch]

    lines = [
        "---",
        "library_name: robustft",
        "tags:",
        "- robustft",
        "- text-classification",
        *([f"- {arch}-connections"] if im else []),
        "---",
        "",
        f"# {title}{base_type} classifier trained with robustft ({info.get('method', 'unknown method')})",
        "",
    ]
    if im:
        lines += [
            "**This is not a plain Hugging Face model.** Its config has model_type "
            f"`{config.get('model_type')}`: plain `transformers` Auto classes refuse it, and loading it with "
            f"an explicit class (e.g. `{(config.get('architectures') or ['the base class'])[0]}`) would drop "
            "its implicit-Euler connections and change its predictions. Load it with robustft (below).",
            "",
        ]
    lines += [
        "## How to load",
        "",
        "With robustft installed (`pip install robustft`):",
        "",
        "```python",
        "from robustft.models.factory import load_classifier",
        "",
        f'model, tokenizer = load_classifier("path/to/{folder.name}")  # this folder',
        "```",
        "",
    ]
    if label_names:
        lines += [f"Labels: {', '.join(f'{i} = {name}' for i, name in enumerate(label_names))}.", ""]

    lines += ["## Training", "", "| | |", "|---|---|"]
    lines += [f"| {key} | {_cell(info[key])} |" for key in KNOWN if key in info]
    lines += [f"| architecture | {arch}{' (' + base_type + ')' if base_type else ''} |", ""]
    if im:
        lines += ["## IM settings (`config.im`)", "", "| setting | value |", "|---|---|"]
        lines += [f"| {key} | {_cell(value)} |" for key, value in im.items()] + [""]

    lines += ["## Results", ""]
    lines += _figures("Dev (model selection)", info.get("dev"))
    lines += _figures("Robustness", info.get("robustness"))
    if "dev" not in info and "robustness" not in info:
        lines += ["No figures were given for this model.", ""]
    other = {k: v for k, v in info.items() if k not in KNOWN and k not in ("dev", "robustness")}
    if other:
        lines += ["## Other run details", "", "| | |", "|---|---|"]
        lines += [f"| {key} | {_cell(value)} |" for key, value in other.items()] + [""]
    path = folder / "README.md"
    atomic_write_text(path, "\n".join(lines))
    return path


def _figures(title: str, values) -> list[str]:
    if not values:
        return []
    if not isinstance(values, dict):
        return [f"**{title}:** {_cell(values)}", ""]
    return [f"**{title}**", "", "| | |", "|---|---|", *[f"| {k} | {_cell(v)} |" for k, v in values.items()], ""]


def _cell(value) -> str:
    if isinstance(value, float):
        text = f"{value:.4g}"
    elif isinstance(value, dict | list | tuple):
        text = json.dumps(value, sort_keys=True, default=str)
    else:
        text = str(value)
    return text.replace("|", "\\|").replace("\n", " ")
