"""`import robustft` teaches transformers' Auto classes the saved IM/EX model types, so that

    import robustft
    from transformers import AutoModelForSequenceClassification, pipeline
    model = AutoModelForSequenceClassification.from_pretrained("runs/a/best")     # IM connections restored
    classify = pipeline("text-classification", model="runs/a/best")

give the IM/EX model robustft trained, with no remote code (everything registered is robustft's own classes,
`trust_remote_code` stays off). A saved IM/EX config has model_type "robustft_im_<base>" (im_settings), which plain
transformers refuses with an error that names that type, and so names robustft.

Each registered model class is the encoder's own class (BertForSequenceClassification, ...) whose constructor
re-applies the config's IM settings; parameters and state-dict keys are the encoder's, so weights load unchanged.
"""

from __future__ import annotations

from transformers import (
    CONFIG_MAPPING,
    MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING,
    MODEL_MAPPING,
    AutoConfig,
    AutoModel,
    AutoModelForSequenceClassification,
    PreTrainedConfig,
    PreTrainedModel,
)

from robustft.models.im import apply_from_config, marked_config_class

# Encoders whose layers are a list of residual blocks (im.encoder_layers finds them); registering one costs ~10 ms.
# An IM model of another encoder type loads through the Auto classes after `register_base("<its model_type>")`.
ENCODER_TYPES = (
    "bert",
    "roberta",
    "xlm-roberta",
    "camembert",
    "mpnet",
    "deberta",
    "deberta-v2",
    "electra",
    "distilbert",
)
AUTO_CLASSES = (
    (AutoModel, MODEL_MAPPING),
    (AutoModelForSequenceClassification, MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING),
)

_MODEL_CLASSES: dict[type, type] = {}


class ImConnectionsOnInit:
    """Mixed in before an encoder class: build the encoder, then turn its layers into the config's IM/EX steps."""

    def __init__(self, config: PreTrainedConfig, *args, **kwargs):
        super().__init__(config, *args, **kwargs)
        apply_from_config(self)


def im_model_class(base_class: type[PreTrainedModel], config_class: type[PreTrainedConfig]) -> type:
    """`RobustftIm<BaseClass>`: `base_class` with IM/EX connections from its config (one class per base class)."""
    if base_class not in _MODEL_CLASSES:
        _MODEL_CLASSES[base_class] = type(
            f"RobustftIm{base_class.__name__}",
            (ImConnectionsOnInit, base_class),
            {"config_class": config_class, "__module__": __name__},
        )
    return _MODEL_CLASSES[base_class]


def register_base(base_type: str) -> bool:
    """Register "robustft_im_<base_type>" with AutoConfig and the Auto model classes; False when transformers has
    no such encoder (nothing registered). Registering twice is harmless."""
    if base_type not in CONFIG_MAPPING:
        return False
    base_config = CONFIG_MAPPING[base_type]
    config_class = marked_config_class(base_config)
    AutoConfig.register(config_class.model_type, config_class, exist_ok=True)
    for auto, mapping in AUTO_CLASSES:
        base_class = mapping.get(base_config, None)
        if base_class is not None and not isinstance(base_class, tuple):
            auto.register(config_class, im_model_class(base_class, config_class), exist_ok=True)
    return True


def register_all() -> None:
    """Register every encoder type of ENCODER_TYPES (done once, when robustft is imported)."""
    for base_type in ENCODER_TYPES:
        register_base(base_type)


register_all()
