"""Packages that are also verbs: `robustft.train(cfg)` and `robustft.evaluate(cfg)` call the verb while
`robustft.train.loop` and `robustft.evaluate.stats` stay importable modules of the same package."""

from __future__ import annotations

import importlib
import sys
import types


def callable_package(name: str, target: str) -> None:
    """Make the package `name` callable: calling it calls `target` ('module:function'), imported on first call."""
    module_name, _, function = target.partition(":")

    class VerbPackage(types.ModuleType):
        def __call__(self, *args, **kwargs):
            return getattr(importlib.import_module(module_name), function)(*args, **kwargs)

    sys.modules[name].__class__ = VerbPackage
