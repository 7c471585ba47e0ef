"""The package version, in the ground layer so run folders can record it without importing the package top.

pyproject.toml is its one source. A source checkout (the editable install the README's `make main` makes) reads it
from there, because installed metadata keeps the version of the last `pip install` and goes stale when the file
changes; an installed wheel, which has no pyproject.toml beside it, reads its metadata.
"""

from __future__ import annotations

import re
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def read_version() -> str:
    checkout = _pyproject_version(PYPROJECT)
    if checkout is not None:
        return checkout
    from importlib import metadata  # only outside a checkout: it alone took 0.13 s of `robustft --version`

    try:
        return metadata.version("robustft")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def _pyproject_version(path: Path) -> str | None:
    """`version` of the [project] table of robustft's pyproject.toml; None for a missing or foreign file."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return None
    project = re.search(r"^\[project\]\s*$(.*?)(?=^\[|\Z)", text, re.M | re.S)
    if project is None or not re.search(r'^name\s*=\s*"robustft"\s*$', project.group(1), re.M):
        return None
    found = re.search(r'^version\s*=\s*"([^"]+)"\s*$', project.group(1), re.M)
    return found.group(1) if found else None


__version__ = read_version()
