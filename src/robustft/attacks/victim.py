"""The victim: every model call of every attack goes through here, once.

It batches queries (sorted by length, padded to the longest in the batch, never to the model
maximum), caches outputs by input across the whole run, counts queries per attacked example (each
distinct input once, cached or not, so counts do not depend on run order or on resume), enforces a
query budget, and runs under `no_grad` and optionally bf16 autocast.

`VictimMode` switches the speed features off for the benchmark's baselines: one query at a time
without a cache, or TextAttack-like padding of every query to the model maximum.
"""

from __future__ import annotations

from collections import OrderedDict
from contextlib import nullcontext
from dataclasses import dataclass

import numpy as np
import torch

from robustft.data.example import Example
from robustft.data.tasks import Task, get_task


@dataclass(frozen=True)
class VictimMode:
    cache: bool = True
    batched: bool = True
    pad_to_max_length: bool = False  # TextAttack's HuggingFaceModelWrapper pads every query to the maximum


FAST = VictimMode()
ONE_AT_A_TIME = VictimMode(cache=False, batched=False)
TEXTATTACK_LIKE = VictimMode(cache=True, batched=True, pad_to_max_length=True)
MODES = {"fast": FAST, "one-at-a-time": ONE_AT_A_TIME, "textattack-like": TEXTATTACK_LIKE}


def _key(example: Example) -> tuple[str, str | None]:
    return example.text_a, example.text_b


class Victim:
    """Class probabilities for lists of Examples, batched, cached and counted.

    `probs(examples)` returns an (n, num_labels) float32 array. With a query budget it returns only the
    prefix of rows that fit in what is left of the budget (cached or already-counted inputs are free);
    callers check `len(result) < len(examples)` or `exhausted`.
    """

    def __init__(self, model, tokenizer, task: Task | str, max_length: int | None = None, batch_size: int = 32,
                 bf16: bool = False, query_budget: int | None = None, mode: VictimMode = FAST,
                 cache_size: int = 1 << 18, device: str | torch.device | None = None):
        self.task = get_task(task) if isinstance(task, str) else task
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.device = torch.device(device) if device is not None else next(model.parameters()).device
        limit = min(getattr(tokenizer, "model_max_length", 512) or 512,
                    getattr(model.config, "max_position_embeddings", 512) or 512)
        self.max_length = min(max_length, limit) if max_length else limit
        self.batch_size = batch_size if mode.batched else 1
        self.bf16 = bf16
        self.mode = mode
        self.query_budget = query_budget
        self.cache_size = cache_size
        self._cache: OrderedDict[tuple, np.ndarray] = OrderedDict()
        self._seen: set[tuple] = set()
        self.total_forward_rows = 0  # rows actually run through the model (for benchmarks)
        self.exhausted = False

    # --- per-example accounting ------------------------------------------------------------------
    def reset(self, query_budget: int | None = ...) -> None:
        """Start counting for a new attacked example; optionally set its query budget."""
        self._seen = set()
        self.exhausted = False
        if query_budget is not ...:
            self.query_budget = query_budget

    @property
    def queries(self) -> int:
        """Distinct inputs queried since the last reset."""
        return len(self._seen)

    @property
    def budget_left(self) -> float:
        return float("inf") if self.query_budget is None else self.query_budget - self.queries

    def clear_cache(self) -> None:
        """Forget cached outputs (benchmarks time cold runs; a changed model must not reuse them)."""
        self._cache.clear()
        self.total_forward_rows = 0

    # --- model calls -----------------------------------------------------------------------------
    def probs(self, examples: list[Example]) -> np.ndarray:
        keys = [_key(e) for e in examples]
        allowed = len(keys)
        if self.query_budget is not None:
            left, new = self.budget_left, set()
            for i, k in enumerate(keys):
                if k not in self._seen and k not in new:
                    if len(new) >= left:
                        allowed = i
                        self.exhausted = True
                        break
                    new.add(k)
        keys = keys[:allowed]
        self._seen.update(keys)
        missing = list(dict.fromkeys(k for k in keys if not (self.mode.cache and k in self._cache)))
        fresh = dict(zip(missing, self._forward(missing), strict=True)) if missing else {}
        out = np.empty((len(keys), self.task.num_labels), dtype=np.float32)
        for i, k in enumerate(keys):
            if k in fresh:
                out[i] = fresh[k]
            else:
                out[i] = self._cache[k]
                self._cache.move_to_end(k)
        if self.mode.cache:
            for k, p in fresh.items():
                self._cache[k] = p
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return out

    def predict(self, examples: list[Example]) -> np.ndarray:
        return self.probs(examples).argmax(-1)

    def encode(self, keys: list[tuple[str, str | None]]):
        a = [k[0] for k in keys]
        b = [k[1] for k in keys] if self.task.is_pair else None
        padding = "max_length" if self.mode.pad_to_max_length else "longest"
        return self.tokenizer(a, b, truncation=True, max_length=self.max_length, padding=padding,
                              return_tensors="pt")

    def token_length(self, example: Example) -> int:
        """Number of tokens of an example before truncation (to report inputs longer than the maximum)."""
        ids = self.tokenizer(example.text_a, example.text_b, truncation=False)["input_ids"]
        return len(ids)

    def _forward(self, keys: list[tuple[str, str | None]]) -> np.ndarray:
        batch = self.batch_size
        # Sort by length so each batch pads little; results go back to the callers' order.
        order = sorted(range(len(keys)), key=lambda i: len(keys[i][0]) + len(keys[i][1] or ""))
        result = np.empty((len(keys), self.task.num_labels), dtype=np.float32)
        autocast = torch.autocast(self.device.type, dtype=torch.bfloat16) if self.bf16 else nullcontext()
        with torch.no_grad(), autocast:
            for s in range(0, len(order), batch):
                idx = order[s:s + batch]
                enc = {k: v.to(self.device) for k, v in self.encode([keys[i] for i in idx]).items()}
                logits = self.model(**enc).logits.float()
                result[idx] = torch.softmax(logits, dim=-1).cpu().numpy()
                self.total_forward_rows += len(idx)
        return result
