"""One-file attack recipes and `build_attack(name, victim, protocol, overrides)`."""

from __future__ import annotations

import copy

from robustft.attacks.recipes import bert_attack, genetic, pwws, textfooler
from robustft.attacks.recipes.common import PROTOCOLS
from robustft.errors import ConfigError

RECIPES = {"pwws": pwws, "textfooler": textfooler, "bert-attack": bert_attack, "genetic": genetic}


def recipe_config(name: str, protocol: str | None = None, overrides: dict | None = None) -> dict:
    """The recipe's constants, then the protocol's, then the user's overrides (later wins)."""
    if name not in RECIPES:
        raise ConfigError(f"unknown recipe {name!r}; choose from {', '.join(RECIPES)}")
    config = copy.deepcopy(RECIPES[name].CONFIG)
    if protocol:
        if protocol not in PROTOCOLS:
            raise ConfigError(f"unknown protocol {protocol!r}; choose from {', '.join(PROTOCOLS)}")
        config.update(copy.deepcopy(PROTOCOLS[protocol]))
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


__all__ = ["RECIPES", "PROTOCOLS", "recipe_config", "build_attack"]
