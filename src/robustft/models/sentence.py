"""Sentence embeddings of a sentence-transformers encoder: mean-pooled last hidden states, unit length (all-MiniLM-L6-v2
by default, the model the offline backbone comes from). A2T's sentence-similarity constraint uses it in training."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from transformers import AutoModel, AutoTokenizer

from robustft import runtime
from robustft.data.batching import model_inputs, tokenize_pad
from robustft.models.factory import model_reference, pretrained


class SentenceEncoder:
    """`encoder(texts)` -> [n, d] unit vectors (CPU), cached by text (originals repeat across a search's steps)."""

    def __init__(self, model: str = "minilm", device: torch.device | str = "cpu", cache_size: int = 100_000):
        ref = model_reference(model)
        self.tokenizer = pretrained(AutoTokenizer, ref, "tokenizer", model)
        self.model = pretrained(AutoModel, ref, "sentence encoder", model, use_safetensors=True).eval().to(device)
        self.cache: dict[str, torch.Tensor] = {}
        self.cache_size = cache_size

    @torch.no_grad()
    def encode(self, texts: list[str]) -> torch.Tensor:
        enc = runtime.to_device(model_inputs(tokenize_pad(self.tokenizer, texts, max_length=256)), self.device)
        hidden = self.model(**enc).last_hidden_state.float()
        mask = enc["attention_mask"].unsqueeze(-1).float()
        return F.normalize((hidden * mask).sum(1) / mask.sum(1).clamp_min(1.0), dim=-1).cpu()

    @property
    def device(self) -> torch.device:
        return runtime.model_device(self.model)

    def __call__(self, texts: list[str]) -> torch.Tensor:
        missing = list(dict.fromkeys(t for t in texts if t not in self.cache))
        if missing:
            if len(self.cache) + len(missing) > self.cache_size:
                self.cache.clear()
            self.cache.update(zip(missing, self.encode(missing), strict=True))
        return torch.stack([self.cache[t] for t in texts])
