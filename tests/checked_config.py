"""What a verb checks of its config before it loads anything: `validate` (kinds and ranges, pure), then
`robustft.verbs.check` (IM settings against the architecture, a user's data made into its task), then the method's
or the recipe's own settings. `build_config` alone is only the first."""

from robustft import verbs
from robustft.attacks.recipes import recipe_config
from robustft.config import AttackConfig, TrainConfig, build_config
from robustft.training.method import resolve_method


def checked(cfg):
    verbs.check(cfg)
    if isinstance(cfg, TrainConfig):
        resolve_method(cfg)
    if isinstance(cfg, AttackConfig):
        recipe_config(cfg.recipe, cfg.protocol, cfg.recipe_args)
    return cfg


def checked_config(cls, files=(), overrides=()):
    return checked(build_config(cls, list(files), list(overrides)))
