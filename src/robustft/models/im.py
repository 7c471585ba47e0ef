"""IM-BERT (implicit-Euler connections) and the EX-BERT control for any Hugging Face encoder.

One call converts a loaded model; the settings go into `model.config.im`, so `save_pretrained` keeps
them and `load_classifier` re-applies them on load. Parameters and state-dict keys do not change: a
plain checkpoint loads into an IM model and the other way round.

    model, tok = load_classifier("minilm", label_names=("negative", "positive"))
    convert(model, arch="im", layers="1-6", K=3, eta=0.1, form="increment", grad="unrolled")
    im_stats(model)      # per-layer solve counts, divergences, residuals of the latest forward
    with exact_gradients(model) as switched:   # gradient attacks and inner adversaries: the true gradient
        ...

Layer numbers are 1-based (layer 1 follows the embeddings).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from torch import nn

from robustft.errors import ConfigError
from robustft.models.im_layer import ImDivergence, ImLayerStats, ImplicitStepMixin, implicit_class
from robustft.models.im_settings import (
    MODEL_TYPE_PREFIX,
    ImSettings,
    parse_layers,
)

__all__ = [
    "ImSettings",
    "ImDivergence",
    "convert",
    "unconvert",
    "apply_from_config",
    "exact_gradients",
    "adversary_gradients",
    "ADVERSARY_GRAD_MODES",
    "im_stats",
    "reset_im_stats",
    "encoder_layers",
    "parse_layers",
    "settings_of",
]

CONFIG_KEY = "im"
_LAYER_LIST_PATHS = ("encoder.layer", "encoder.layers", "layers", "transformer.layer", "layer")


def convert(
    model: nn.Module, settings: ImSettings | dict[str, Any] | None = None, *, arch: str | None = None, **overrides
) -> nn.Module:
    """Turn the chosen layers of `model` into implicit (arch "im") or explicit (arch "ex") steps.

    Keyword overrides are ImSettings fields: arch, layers (1-based tuple or a spec like "1-6"), K, eta,
    dt, form, grad, on_divergence, tol. arch "plain" removes any conversion. Converting again replaces
    the previous settings. Returns the same model object (converted in place).
    """
    if arch == "plain":
        return unconvert(model)
    base = settings if isinstance(settings, ImSettings) else ImSettings.from_dict(settings)
    values = base.to_dict()
    values.update(overrides)
    if arch is not None:
        values["arch"] = arch
    layers = encoder_layers(model)
    resolved = ImSettings.from_dict(values).with_layers(len(layers))
    unconvert(model)
    for number in resolved.layers:
        layer = layers[number - 1]
        layer.__class__ = implicit_class(type(layer))
        layer.im_settings = resolved
        layer.im_stats = ImLayerStats(layer=number)
    config = getattr(model, "config", None)
    if config is not None:
        setattr(config, CONFIG_KEY, resolved.to_dict())
        config.__class__ = marked_config_class(type(config))
    return model


def unconvert(model: nn.Module) -> nn.Module:
    """Back to the plain encoder (same parameters); drops the settings from the config."""
    for layer in encoder_layers(model):
        if isinstance(layer, ImplicitStepMixin):
            layer.__class__ = layer._im_base_class
            del layer.im_settings, layer.im_stats
    config = getattr(model, "config", None)
    if config is not None and getattr(config, CONFIG_KEY, None) is not None:
        setattr(config, CONFIG_KEY, None)
    if config is not None:
        config.__class__ = getattr(type(config), "_robustft_base_config", type(config))
    return model


_CONFIG_CLASSES: dict[type, type] = {}


def marked_config_class(base: type) -> type:
    """The subclass of a config class whose model_type is "robustft_im_<base type>" (see im_settings)."""
    base = getattr(base, "_robustft_base_config", base)
    if base not in _CONFIG_CLASSES:
        _CONFIG_CLASSES[base] = type(
            f"RobustftIm{base.__name__}",
            (base,),
            {"model_type": MODEL_TYPE_PREFIX + base.model_type, "_robustft_base_config": base},
        )
    return _CONFIG_CLASSES[base]


def apply_from_config(model: nn.Module) -> nn.Module:
    """Re-apply the IM/EX settings a saved config carries (no-op for a plain config)."""
    values = getattr(getattr(model, "config", None), CONFIG_KEY, None)
    if not values:
        return model
    return convert(model, ImSettings.from_dict(values))


@contextlib.contextmanager
def exact_gradients(model: nn.Module) -> Iterator[bool]:
    """Within the block every IM layer back-propagates through its K steps (grad "unrolled").

    The other modes ("explicit", "jfb"; "implicit" and "adaptive", exact only as far as the solve converged) give
    the solution's value with another gradient; an adversary that ascends that surrogate is weakened by gradient
    masking (docs/im_bert.md, "Gradients seen by adversaries"). Forward values do not change. Yields True when
    some layer was switched, False for a plain or EX model or one already unrolled. `model.config.im` is left as
    it is, and the layers' settings are restored on exit, also after an exception.
    """
    switched = [
        layer
        for layer in encoder_layers(model)
        if isinstance(layer, ImplicitStepMixin)
        and layer.im_settings.arch == "im"
        and layer.im_settings.K > 0
        and layer.im_settings.grad != "unrolled"
    ]
    before = [layer.im_settings for layer in switched]
    for layer, settings in zip(switched, before, strict=True):
        layer.im_settings = replace(settings, grad="unrolled")
    try:
        yield bool(switched)
    finally:
        for layer, settings in zip(switched, before, strict=True):
            layer.im_settings = settings


# How an adversary inside training (or an attack) differentiates an IM model: "exact" switches every IM
# layer to unrolled gradients for the adversary's steps; "model" keeps the model's own gradient mode.
ADVERSARY_GRAD_MODES = ("exact", "model")


def adversary_gradients(model: nn.Module, mode: str):
    """`exact_gradients(model)` for mode "exact", a no-op context (yielding False) for "model"."""
    if mode not in ADVERSARY_GRAD_MODES:
        raise ConfigError(f"adversary gradient mode must be one of {', '.join(ADVERSARY_GRAD_MODES)}, not {mode!r}")
    return exact_gradients(model) if mode == "exact" else contextlib.nullcontext(False)


def settings_of(model: nn.Module) -> ImSettings | None:
    values = getattr(getattr(model, "config", None), CONFIG_KEY, None)
    return ImSettings.from_dict(values) if values else None


def im_stats(model: nn.Module) -> dict[str, dict]:
    """Per converted layer (key 'layer N', 1-based): forwards, examples, diverged, non-finite and the
    mean relative residual |r(z_k)|/|z_k| for k = 0..K of the latest forward."""
    return {
        f"layer {layer.im_stats.layer}": layer.im_stats.as_dict()
        for layer in encoder_layers(model)
        if isinstance(layer, ImplicitStepMixin)
    }


def reset_im_stats(model: nn.Module) -> None:
    for layer in encoder_layers(model):
        if isinstance(layer, ImplicitStepMixin):
            layer.im_stats = ImLayerStats(layer=layer.im_stats.layer)


def encoder_layers(model: nn.Module) -> nn.ModuleList:
    """The encoder's list of residual layers (BERT, RoBERTa, MiniLM, MPNet, DeBERTa, DistilBERT)."""
    base = getattr(model, "base_model", model)
    depth = getattr(getattr(model, "config", None), "num_hidden_layers", None)
    for root in (base, model):
        for path in _LAYER_LIST_PATHS:
            found = _get_path(root, path)
            if isinstance(found, nn.ModuleList) and len(found) > 0 and (depth is None or len(found) == depth):
                return found
    raise ConfigError(
        f"cannot find the encoder layer list of {type(model).__name__}: "
        f"looked for {', '.join(_LAYER_LIST_PATHS)} under the base model"
    )


def _get_path(root: nn.Module, dotted: str):
    obj = root
    for part in dotted.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj
