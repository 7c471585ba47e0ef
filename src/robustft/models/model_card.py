"""README.md for a saved model folder: what the model is, how it was trained, what it scored, how to load it.

    write_model_card(run_dir / "best", {"method": "rift-snli", "task": "snli", "base_model": "minilm",
                                        "train_split": "train", "n_train": 1000, "seed": 0,
                                        "dev": {"accuracy": 0.543, "n": 300}, "robustness": {...}})

The card names robustft's version and its real install command (a checkout's `pip install -e .`), and says how
to load the folder: transformers' Auto classes and `pipeline` after `import robustft`, or `load_classifier`; for a
SAFER, RanMASK or DNE model, that `pipeline` gives the bare classifier and how to get its ensemble (`as_ensemble`).
The IM/EX settings come from the folder's own config.json (`im`), so the card cannot disagree with the
weights. Figures appear only when `info` gives them; nothing is filled in by guess.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from robustft.atomic import atomic_write_text
from robustft.data.tasks import TASKS
from robustft.models.im_settings import base_model_type
from robustft.version import __version__

INSTALL = "pip install -e ."  # the README's install (make main), from a checkout of the repository
ENSEMBLE_KEY = "robustft_ensemble"  # robustft.defenses.settings.CONFIG_KEY (a SAFER, RanMASK or DNE model's vote)
TMP_SUFFIX = ".tmp"  # a training writes the card into best.tmp/ before swapping it in as best/

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
    folder, info = Path(folder), {"robustft": __version__, **info}  # the version that wrote it, unless info says
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
    name = folder.name.removesuffix(TMP_SUFFIX)
    lines += _how_to_load(config, name, im is not None, bool(config.get(ENSEMBLE_KEY)))
    if config.get(ENSEMBLE_KEY):
        lines += _ensemble(config[ENSEMBLE_KEY], name, info.get("task"))
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


def _how_to_load(config: dict, name: str, im: bool, ensemble: bool = False) -> list[str]:
    """The loading section: the Auto classes and pipeline after `import robustft`, or robustft's own loader."""
    lines = []
    if im:
        lines += [
            "**This is not a plain Hugging Face model.** Its config has model_type "
            f"`{config.get('model_type')}`, which only robustft knows: after `import robustft` the Auto classes and "
            "`pipeline` load it with its implicit-Euler connections. Without that import, transformers refuses the "
            "model type and suggests upgrading transformers (that does not help: import robustft), and an explicit "
            f"class (e.g. `{(config.get('architectures') or ['the base class'])[0]}`) would drop the connections "
            "and change its predictions.",
            "",
        ]
    return lines + [
        "## How to load",
        "",
        f"Install robustft from its source repository (in a checkout: `{INSTALL}`; it is not installed from PyPI).",
        "",
        "```python",
        "import robustft  # registers robustft's model types with transformers' Auto classes (no remote code)",
        "from transformers import pipeline",
        "",
        f'classify = pipeline("text-classification", model="path/to/{name}")  # this folder'
        + ("; the bare classifier, without its ensemble (below)" if ensemble else ""),
        "",
        "from robustft.models.factory import load_classifier",
        "",
        f'model, tokenizer = load_classifier("path/to/{name}")  # or the training run folder that holds it',
        "```",
        "",
    ]


def _ensemble(settings: dict, name: str, task: str | None) -> list[str]:
    """A SAFER / RanMASK / DNE model predicts by the vote of perturbed copies of each input, which transformers knows
    nothing of: say what `pipeline` gives and how to get what robustft scored (issue 67). A registered pipeline that
    keeps the ensemble would need the defense's word tables and the task's text fields inside transformers."""
    kind = {"safer": "SAFER", "ranmask": "RanMASK", "dne": "DNE"}.get(settings.get("kind"), "ensemble")
    copies = settings.get("copies", "?")
    registered = task if task and task in TASKS else None
    return [
        "## Its ensemble (not in `pipeline`)",
        "",
        f"**`pipeline` and the Auto classes give the bare classifier, without its ensemble.** This {kind} model "
        f"predicts by the vote of {copies} randomly perturbed copies of each input (`{ENSEMBLE_KEY}` in config.json: "
        f"{_cell(settings)}); robustft's `eval`, `attack` and certificates use that ensemble, and may differ from "
        "the bare classifier (the dev accuracy below, from model selection during training, is the bare "
        "classifier's). To predict as robustft's `eval` and `attack` do:",
        "",
        "```python",
        "from robustft.data.tasks import get_task",
        "from robustft.defenses.ensemble import as_ensemble",
        "from robustft.models.factory import load_classifier",
        "",
        f'model, tokenizer = load_classifier("path/to/{name}")',
        f'model = as_ensemble(model, tokenizer, get_task("{registered or "sst2"}"))  # an nn.Module: '
        "model(**tokenizer(texts, ...)).logits",
        "```",
        "",
        *(
            []
            if registered
            else [
                f"The task passed to `as_ensemble` only says which text field is perturbed: the model was trained on "
                f"{task or 'an unrecorded task'}; any registered task with the same fields (one text: sst2; a pair: "
                "snli) gives the same ensemble.",
                "",
            ]
        ),
        f"On the command line `robustft eval --model path/to/{name}` and `robustft attack --model ...` use the "
        "ensemble.",
        "",
    ]


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
