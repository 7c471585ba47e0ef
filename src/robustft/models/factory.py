"""Backbone loading: any Hugging Face encoder for sequence classification, and tiny random BERTs.

A model is an alias (`minilm`), a model folder, a hub name or a robustft training run folder (its best/ model).

Weights load only from safetensors (`use_safetensors=True`): never unpickle a checkpoint. A model's own
Python code never runs (`trust_remote_code=False` on every load, and a folder that needs its code is
refused before transformers sees it). Every load failure is a one-line `ModelLoadError` naming the path.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Iterator
from pathlib import Path

import torch
from safetensors import SafetensorError
from transformers import (
    CONFIG_MAPPING,
    AutoConfig,
    AutoModelForSequenceClassification,
    AutoTokenizer,
    BertConfig,
    BertForMaskedLM,
    BertForSequenceClassification,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)
from transformers.utils import logging as transformers_logging

from robustft import resources, runs
from robustft.errors import ConfigError, MissingResource, suggest
from robustft.models.im_settings import base_model_type, check_user_settings

# The largest encoder a model folder may describe: far above public encoders (48 layers, hidden 4096, 8,192
# positions, 250k word pieces), far below what builds for hours or exhausts memory.
SIZE_LIMITS = {
    "num_hidden_layers": 1000,
    "hidden_size": 65_536,
    "num_attention_heads": 1024,
    "intermediate_size": 262_144,
    "max_position_embeddings": 1_048_576,
    "vocab_size": 10_000_000,
}
PICKLE_WEIGHTS = ("*.bin", "*.pt", "*.pth", "*.ckpt", "*.pkl")
LOAD_ERRORS = (OSError, ValueError, KeyError, TypeError, SafetensorError)  # what transformers raises for bad folders


class ModelLoadError(MissingResource):
    """A model, config or tokenizer cannot be loaded safely; the message names the path."""


def check_model_folder(ref: str) -> None:
    """Refuse, before transformers reads it, a local folder that needs its own code or has only pickles."""
    folder = Path(ref)
    if not folder.is_dir():
        return  # a hub name: trust_remote_code=False still applies
    config_file = folder / "config.json"
    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelLoadError(f"cannot read {config_file}: {one_line(exc)}") from None
    if not isinstance(config, dict):
        raise ModelLoadError(f"{config_file} is not a JSON object")
    model_type = config.get("model_type")
    if "auto_map" in config and model_type not in CONFIG_MAPPING:
        raise ModelLoadError(
            f"model folder {folder} needs its own Python code (auto_map, model_type {model_type!r} unknown to "
            f"transformers): robustft never runs a model's code (trust_remote_code=False)"
        )
    check_config_values(config_file, config)
    pickles = sorted(f.name for pattern in PICKLE_WEIGHTS for f in folder.glob(pattern))
    if pickles and not list(folder.glob("*.safetensors")):
        raise ModelLoadError(
            f"model folder {folder} has only pickle weights ({', '.join(pickles)}): robustft loads safetensors "
            f"only and never unpickles; convert it with save_pretrained(..., safe_serialization=True) where you "
            f"trust it"
        )


def check_config_values(config_file: Path, config: dict) -> None:
    """Refuse a config.json whose sizes would build for hours (num_hidden_layers 1e6 hung a run), a value that is
    not a finite number where one is read, or IM settings beyond what a user may ask for (im.K 1e9)."""
    for key, value in config.items():
        if isinstance(value, float) and not math.isfinite(value):
            raise ModelLoadError(f"{config_file}: {key} is {value}, not a finite number")
    for key, high in SIZE_LIMITS.items():
        value = config.get(key)
        whole = isinstance(value, int) and not isinstance(value, bool)
        if value is not None and not (whole and 1 <= value <= high):
            raise ModelLoadError(f"{config_file}: {key} must be a whole number in [1, {high}], got {value!r}")
    if config.get("im") is not None:
        try:
            if not isinstance(config["im"], dict):
                raise ConfigError(f"im must be a mapping of IM settings, got {config['im']!r}")
            check_user_settings(config["im"])
        except ConfigError as exc:
            raise ModelLoadError(f"{config_file}: {exc}") from None


def one_line(exc: BaseException) -> str:
    if isinstance(exc, KeyError):  # str(KeyError) is only the key
        return f"missing entry {exc} (a damaged or incompatible file)"
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


def pretrained(cls, ref: str, what: str, name: str | None = None, **kwargs):
    """`cls.from_pretrained(ref, trust_remote_code=False, **kwargs)`; any failure is one line naming the path."""
    check_model_folder(ref)
    try:
        with quiet_transformers():
            return cls.from_pretrained(ref, trust_remote_code=False, **kwargs)
    except LOAD_ERRORS as exc:
        shown = ref if name in (None, ref) else f"'{name}' ({ref})"
        hub = "" if Path(ref).exists() else "no such folder here, and as a hub name: "  # a mistyped path, or a name
        raise ModelLoadError(f"cannot load a {what} from {shown}: {hub}{one_line(exc)}") from None


@contextlib.contextmanager
def quiet_transformers() -> Iterator[None]:
    """transformers' load report (a fresh head's keys) and its weight-loading bar, for one load only: they leaked
    to a Python user's stderr (issue 67); robustft says itself what it initialised."""
    verbosity, bar = transformers_logging.get_verbosity(), transformers_logging.is_progress_bar_enabled()
    transformers_logging.set_verbosity_error()
    transformers_logging.disable_progress_bar()
    try:
        yield
    finally:
        transformers_logging.set_verbosity(verbosity)
        if bar:
            transformers_logging.enable_progress_bar()


def model_reference(name_or_path: str) -> str:
    """What `from_pretrained` reads for an alias, folder, hub name or training run folder (its best/ model)."""
    resolved = runs.resolve(name_or_path)
    if resolved.run_path is None:  # not a training run with a best model: refuse any other run folder by name
        saved = runs.read_description(Path(name_or_path))
        if saved is not None:
            verb = saved.get("verb")
            problem = (
                "has no best/ model yet (one is saved after the first epoch)" if verb == "train" else "holds no model"
            )
            raise ModelLoadError(
                f"{name_or_path} is a robustft {verb} run folder and {problem}: give a training run folder or a model"
            )
    ref = resources.resolve_model(resolved.model)
    if ref == resolved.model:  # neither an alias nor an existing folder: a hub name, unless it can only be a path
        check_not_a_missing_folder(ref)
    return ref


def check_not_a_missing_folder(ref: str) -> None:
    """A reference that can only be a local folder and does not exist is 'no such folder', not a hub connection
    error: hub names are NAME or ORG/NAME, so more than one '/', a trailing '/', or a first part that is a folder
    here (`runs/mrr` beside runs/) means a path (issue 67)."""
    parts = ref.replace("\\", "/").split("/")
    local = len(parts) > 2 or ref.endswith(("/", "\\")) or (len(parts) == 2 and Path(parts[0]).is_dir())
    if not local or Path(ref).exists():
        return
    parent = Path(ref.rstrip("/\\")).parent
    near = suggest(Path(ref.rstrip("/\\")).name, [p.name for p in parent.iterdir()]) if parent.is_dir() else ""
    where = f" ({parent} holds no such folder{near})" if parent.is_dir() else f" ({parent} does not exist either)"
    raise ModelLoadError(f"model: no such folder {ref}{where}")


def load_tokenizer(name_or_path: str) -> PreTrainedTokenizerBase:
    ref = model_reference(name_or_path)
    return pretrained(AutoTokenizer, ref, "tokenizer", name_or_path)


def load_classifier(
    name_or_path: str, label_names: tuple[str, ...] | None = None, **config_overrides
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """A sequence classifier and its tokenizer from an alias, a folder or a hub name.

    `label_names` sets num_labels and id2label for a fresh head; a saved classifier keeps its own.
    `config_overrides` are set on the config before the model is built (e.g. im_* settings).
    """
    ref = model_reference(name_or_path)
    config = load_config(name_or_path)
    if label_names is not None and not _has_matching_head(config, label_names):
        config.num_labels = len(label_names)
        config.id2label = dict(enumerate(label_names))
        config.label2id = {n: i for i, n in enumerate(label_names)}
    for key, value in config_overrides.items():
        setattr(config, key, value)
    model = pretrained(
        AutoModelForSequenceClassification, ref, "model", name_or_path, config=config, use_safetensors=True
    )
    if getattr(config, "im", None):  # a saved (or requested) IM/EX model: restore its connections
        from robustft.models.im import apply_from_config

        apply_from_config(model)
    return model, load_tokenizer(name_or_path)


def load_config(name_or_path: str):
    """The model config of an alias, folder or hub name; a saved IM/EX model (model_type "robustft_im_<base>",
    which plain transformers refuses) comes back as its encoder's own config class with its `im` settings."""
    ref = model_reference(name_or_path)
    check_model_folder(ref)  # a broken or foreign config.json stops here, naming the file
    saved = Path(ref) / "config.json"
    if saved.is_file():
        values = json.loads(saved.read_text(encoding="utf-8"))
        base = base_model_type(values.get("model_type"))
        if base is not None:
            values.pop("model_type")
            return AutoConfig.for_model(base, **values)
    return pretrained(AutoConfig, ref, "model config", name_or_path)


def _has_matching_head(config, label_names) -> bool:
    id2label = getattr(config, "id2label", None) or {}
    return [id2label.get(i, id2label.get(str(i))) for i in range(len(label_names))] == list(
        label_names
    ) and config.num_labels == len(label_names)


def tiny_bert_config(num_labels: int = 2, vocab_size: int = 30522, **overrides) -> BertConfig:
    """2 layers, hidden 64: the shape of every fast unit test."""
    kwargs = dict(
        vocab_size=vocab_size,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=128,
        max_position_embeddings=512,
        num_labels=num_labels,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    kwargs.update(overrides)
    return BertConfig(**kwargs)


def tiny_bert(num_labels: int = 2, seed: int = 0, tokenizer: str = "minilm", **overrides):
    """A random tiny BERT classifier with the MiniLM tokenizer (real word pieces, no download)."""
    tok = load_tokenizer(tokenizer)
    torch.manual_seed(seed)
    model = BertForSequenceClassification(tiny_bert_config(num_labels, len(tok), **overrides))
    return model.eval(), tok


def tiny_bert_mlm(seed: int = 0, tokenizer: str = "minilm", **overrides):
    """A random tiny BERT with a masked-LM head (decoder tied to the word embeddings)."""
    tok = load_tokenizer(tokenizer)
    torch.manual_seed(seed)
    model = BertForMaskedLM(tiny_bert_config(2, len(tok), **overrides))
    return model.eval(), tok
