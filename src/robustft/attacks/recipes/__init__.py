"""One-file attack recipes and `build_attack(name, victim, protocol, overrides)`."""

from __future__ import annotations

import copy

from robustft.attacks.recipes import ascc, bert_attack, genetic, pwws, textfooler
from robustft.attacks.recipes.common import ENGINE_DEFAULTS, PROTOCOLS, hashed_config, protocol_keeps
from robustft.errors import ConfigError

RECIPES = {"pwws": pwws, "textfooler": textfooler, "bert-attack": bert_attack, "genetic": genetic, "ascc": ascc}


def recipe_config(name: str, protocol: str | None = None, overrides: dict | None = None) -> dict:
    """The engine's defaults, the recipe's constants, the protocol's (for all recipes, then for this one),
    then the user's overrides (later wins). Every key is recorded in the run's config."""
    if name not in RECIPES:
        raise ConfigError(f"unknown recipe {name!r}; choose from {', '.join(RECIPES)}")
    config = copy.deepcopy({**ENGINE_DEFAULTS, **RECIPES[name].CONFIG})
    config.update({"protocol_max_percent": None, "protocol_similarity": None} if name != "ascc" else {})
    if protocol:
        if protocol not in PROTOCOLS:
            raise ConfigError(f"unknown protocol {protocol!r}; choose from {', '.join(PROTOCOLS)}")
        if name == "ascc":
            raise ConfigError("the white-box ascc attack has no black-box protocol; run it without --protocol")
        config.update(copy.deepcopy(PROTOCOLS[protocol]["all"]))
        config.update(copy.deepcopy(PROTOCOLS[protocol].get(name, {})))
        config["protocol"] = protocol
    for key, value in (overrides or {}).items():
        if key not in config and key != "protocol":
            raise ConfigError(f"recipe {name} has no setting {key!r}; settings: {', '.join(config)}")
        config[key] = value
    return config


def build_attack(name: str, victim, protocol: str | None = None, overrides: dict | None = None, mlm=None):
    """An `Attack` for the recipe; `mlm` = (masked LM, tokenizer) for BERT-Attack and the genetic LM filter."""
    config = recipe_config(name, protocol, overrides)
    return RECIPES[name].build(victim, config, mlm=mlm)


__all__ = ["RECIPES", "PROTOCOLS", "recipe_config", "build_attack", "hashed_config", "protocol_keeps"]
