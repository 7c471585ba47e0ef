"""The names of the files robustft writes into a run folder, and which names are robustft's.

`--overwrite` deletes only these (a user's notes beside them stay); `.lock*` files are never deleted while a run
goes on: they are how two processes agree on who writes the folder.
"""

from __future__ import annotations

import re

MARK = "robustft_run"
CONFIG, METRICS, EXAMPLES, LOCK = "config.json", "metrics.json", "examples.jsonl", ".lock"
SHARDS_LOCK = ".lock.shards"  # held briefly while a shard writes config.json or merges
EXAMPLES_GZ = EXAMPLES + ".gz"  # per-example lines as exported (committed)
SUMMARY_FILES = (CONFIG, METRICS, "probe.json")
VERBS = ("train", "eval", "attack", "probe", "bench")

# Every file and folder a verb writes into its own run folder (shard-suffixed variants included, see `is_ours`).
OUR_FILES = {
    CONFIG,
    METRICS,
    EXAMPLES,
    EXAMPLES_GZ,
    "examples.csv",  # attack
    "probe.json",
    "probe.png",
    *(f"{verb}.log" for verb in VERBS),
}
OUR_FOLDERS = {"best", "checkpoint", "trackers"}  # train: the best model, checkpoints, experiment trackers
# The files save_pretrained and the model card write into best/ (weights, configs, tokenizer files)
MODEL_FILE = re.compile(r"[^/]+\.(json|safetensors|model)|vocab\.txt|merges\.txt|README\.md")
_SHARD = re.compile(r"\.shard-\d+-of-\d+(?=\.)")
_ATOMIC_TMP = re.compile(r"\.\d+\.tmp$")  # atomic.py's temporary name: <file>.<pid>.tmp


def shard_file(name: str, shard: tuple[int, int] | None) -> str:
    """`name` as shard i of n writes it: examples.jsonl -> examples.shard-0-of-2.jsonl."""
    if shard is None:
        return name
    stem, dot, suffix = name.partition(".")
    return f"{stem}.shard-{shard[0]}-of-{shard[1]}{dot}{suffix}"


def is_lock(name: str) -> bool:
    return name.startswith(LOCK)


def is_ours(name: str) -> bool:
    """Whether robustft writes a file or folder of this name into a run folder (locks excepted)."""
    plain = _ATOMIC_TMP.sub("", _SHARD.sub("", name))
    for suffix in (".tmp", ".old"):  # a folder swap interrupted by a kill (atomic.swap_folder)
        if plain.endswith(suffix) and plain.removesuffix(suffix) in OUR_FOLDERS:
            return True
    return plain in OUR_FILES or plain in OUR_FOLDERS
