"""One-file attack recipes and `build_attack(name, victim, protocol, overrides)`."""

from __future__ import annotations

import copy

from robustft.attacks.recipes import ascc, bae, bert_attack, deepwordbug, genetic, pso, pwws, textbugger, textfooler
from robustft.attacks.recipes.common import ENGINE_DEFAULTS, PROTOCOLS, hashed_config, protocol_keeps
from robustft.errors import ConfigError, suggest

RECIPES = {
    "pwws": pwws,
    "textfooler": textfooler,
    "bert-attack": bert_attack,
    "genetic": genetic,
    "textbugger": textbugger,
    "deepwordbug": deepwordbug,
    "ascc": ascc,
    "bae": bae,
    "pso": pso,
}


def recipe_config(name: str, protocol: str | None = None, overrides: dict | None = None) -> dict:
    """The engine's defaults, the recipe's constants, the protocol's (for all recipes, then for this one),
    then the user's overrides (later wins). Every key is recorded in the run's config."""
    if name not in RECIPES:
        raise ConfigError(f"unknown recipe {name!r}{suggest(name, RECIPES)}; choose from {', '.join(RECIPES)}")
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
        check_setting(key, value, config.get(key))
        config[key] = value
    if hasattr(RECIPES[name], "check"):  # a recipe's choices (TextBugger's bugs, DeepWordBug's edits...)
        RECIPES[name].check(config)
    return config


# Settings that count candidates or words: 0 or a negative count would silently change the attack (0 read as "the
# recipe's default", -1 as "all but the last neighbour").
COUNTS = ("max_candidates", "max_num_words", "population", "generations", "combination_k", "draws", "max_edit_distance")

# Shares and cosines: outside these a value silently changes the attack (issue 67): max_percent 0 allows no swap, so
# every example fails, and a negative one likewise; a min_cos above 1 admits no neighbour. (low, high, low excluded)
RANGES = {"max_percent": (0.0, 1.0, True), "protocol_max_percent": (0.0, 1.0, True), "min_cos": (-1.0, 1.0, False)}
RANGES |= {"min_confidence": (0.0, 1.0, False), "v_max": (0.0, float("inf"), True)}


def check_setting(key: str, value, default) -> None:
    """An override of a recipe setting keeps the default's kind (a number for a number, true/false for a flag),
    and a count is a whole number >= 1; else one ConfigError naming recipe_args.KEY."""
    where = f"recipe_args.{key}"
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if isinstance(default, bool) and not isinstance(value, bool):
        raise ConfigError(f"{where}: expects true or false, got {value!r}")
    if isinstance(default, int | float) and not isinstance(default, bool) and value is not None and not number:
        raise ConfigError(f"{where}: expects a number, got {value!r}")
    if key in COUNTS and value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
        raise ConfigError(f"{where}: expects a whole number >= 1 (or null for the recipe's own), got {value!r}")
    if key in RANGES and value is not None:
        low, high, above = RANGES[key]
        if not number or not (low < value if above else low <= value) or not value <= high:
            span = f"{'(' if above else '['}{low:g}, {high:g}]"
            raise ConfigError(f"{where}: expects a number in {span} (or null for none), got {value!r}")


def build_attack(name: str, victim, protocol: str | None = None, overrides: dict | None = None, mlm=None):
    """An `Attack` for the recipe; `mlm` = (masked LM, tokenizer) for BERT-Attack and the genetic LM filter."""
    config = recipe_config(name, protocol, overrides)
    return RECIPES[name].build(victim, config, mlm=mlm)


__all__ = ["RECIPES", "PROTOCOLS", "recipe_config", "build_attack", "hashed_config", "protocol_keeps"]
