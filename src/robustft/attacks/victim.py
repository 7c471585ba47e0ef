"""The victim: every model call of every attack goes through here, once.

It batches queries (sorted by length, padded to the longest in the batch, never to the model
maximum), caches outputs by input across the whole run, counts queries per attacked example in two
units, enforces a query budget in the unit it names, and runs under `no_grad` and the autocast of its
`precision` ("auto", "bf16", "fp16" or "fp32", resolved by `robustft.runtime` for the model's device).

Query units (both recorded for every example):
- "textattack": every text handed to the goal function, repeats and cache hits included (TextAttack's
  `GoalFunction.num_queries`; what `avg_num_queries` means in TextAttack's and TextDefender's tables);
- "distinct": distinct inputs, each counted once per example however often it is asked for.
A budget in the "textattack" unit truncates a request to the queries left (TextAttack's
`attacked_text_list[:queries_left]`); in the "distinct" unit, repeated inputs are free.

Inputs always follow the model: tensors go to `runtime.model_device(model)` at every call, so a model
moved after the victim was built is still fed on its own device.

`VictimMode` switches the speed features off for the benchmark's baselines: one query at a time
without a cache, or every query padded to the model maximum (the padding cost TextAttack's
HuggingFaceModelWrapper pays).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch

from robustft import runtime
from robustft.data.batching import model_inputs, tokenize_pad
from robustft.data.example import Example
from robustft.data.tasks import Task, get_task
from robustft.errors import ConfigError

BUDGET_UNITS = ("textattack", "distinct")


class AttackTimeout(Exception):
    """Raised inside a search when the example's time limit is spent; the attack records a failure."""


@dataclass(frozen=True)
class VictimMode:
    cache: bool = True
    batched: bool = True
    pad_to_max_length: bool = False  # TextAttack's HuggingFaceModelWrapper pads every query to the maximum


FAST = VictimMode()
ONE_AT_A_TIME = VictimMode(cache=False, batched=False)
PADDED_TO_MAX = VictimMode(cache=True, batched=True, pad_to_max_length=True)
MODES = {"fast": FAST, "one-at-a-time": ONE_AT_A_TIME, "pad-to-max-length": PADDED_TO_MAX}


def pad_to_multiple(enc: dict, multiple: int, tokenizer, limit: int) -> dict:
    """The batch padded (on the tokenizer's padding side) to the next multiple of `multiple` tokens, at most
    `limit`: attention-masked padding, so outputs are unchanged up to float noise, while lengths fall into
    few buckets (CPU bf16 kernels pay a set-up cost for every new shape; see docs/performance.md)."""
    width = enc["input_ids"].shape[1]
    target = min(-(-width // multiple) * multiple, max(limit, width))
    if target == width:
        return enc
    extra = target - width
    side = (extra, 0) if getattr(tokenizer, "padding_side", "right") == "left" else (0, extra)
    values = {"input_ids": tokenizer.pad_token_id or 0}
    out = dict(enc)
    for k in ("input_ids", "attention_mask", "token_type_ids"):
        if k in out:
            out[k] = torch.nn.functional.pad(out[k], side, value=values.get(k, 0))
    return out


def _key(example: Example) -> tuple[str, str | None]:
    return example.text_a, example.text_b


class Victim:
    """Class probabilities for lists of Examples, batched, cached and counted.

    `probs(examples)` returns an (n, num_labels) float32 array. With a query budget it returns only the
    prefix of rows that fit in what is left of the budget; callers check `len(result) < len(examples)`
    or `exhausted`.
    """

    def __init__(
        self,
        model,
        tokenizer,
        task: Task | str,
        max_length: int | None = None,
        batch_size: int = 32,
        precision: str = "fp32",
        query_budget: int | None = None,
        budget_unit: str = "textattack",
        mode: VictimMode = FAST,
        cache_size: int = 1 << 18,
        pad_to_multiple_of: int | None = None,
    ):
        if budget_unit not in BUDGET_UNITS:
            raise ConfigError(f"query_budget_unit: expected one of {', '.join(BUDGET_UNITS)}, got '{budget_unit}'")
        if batch_size < 1:
            raise ConfigError(f"batch_size: must be at least 1, got {batch_size}")
        if pad_to_multiple_of is not None and (isinstance(pad_to_multiple_of, bool) or pad_to_multiple_of < 1):
            raise ConfigError(f"pad_to_multiple_of: must be a positive integer or None, got {pad_to_multiple_of!r}")
        if max_length is not None and max_length < 2:
            raise ConfigError(f"max_length: must be at least 2, got {max_length}")
        self.task = get_task(task) if isinstance(task, str) else task
        self.model = model.eval()
        self.tokenizer = tokenizer
        runtime.resolve_precision(precision, self.device)  # fail early on a bad name
        self.precision = precision
        limit = min(
            getattr(tokenizer, "model_max_length", 512) or 512,
            getattr(model.config, "max_position_embeddings", 512) or 512,
        )
        self.max_length = min(max_length, limit) if max_length else limit
        self.position_limit = limit
        self.pad_to_multiple_of = pad_to_multiple_of
        self.bf16_one_thread_below = runtime.BF16_ONE_THREAD_BELOW_ROWS  # 0: small bf16 calls keep every thread
        self.batch_size = batch_size if mode.batched else 1
        self.mode = mode
        self.query_budget, self.budget_unit = query_budget, budget_unit
        self.cache_size = cache_size
        self._cache: OrderedDict[tuple, np.ndarray] = OrderedDict()
        self._caches_by_precision: dict[str, OrderedDict] = {}  # the others, while `in_precision` swaps them
        self._seen: set[tuple] = set()
        self.queries = 0  # TextAttack's unit, since the last reset
        self.total_forward_rows = 0  # rows actually run through the model (for benchmarks)
        self.exhausted = False
        self.deadline: float | None = None

    @property
    def device(self) -> torch.device:
        return runtime.model_device(self.model)

    @property
    def concrete_precision(self) -> str:
        """'bf16', 'fp16' or 'fp32' on the model's current device."""
        return runtime.resolve_precision(self.precision, self.device)

    # --- per-example accounting ------------------------------------------------------------------
    def reset(self, query_budget: int | None = ..., time_limit: float | None = None) -> None:
        """Start counting for a new attacked example; optionally set its query budget and time limit (s)."""
        self._seen = set()
        self.queries = 0
        self.exhausted = False
        self.deadline = None if time_limit is None else time.perf_counter() + time_limit
        if query_budget is not ...:
            self.query_budget = query_budget

    @property
    def distinct_queries(self) -> int:
        """Distinct inputs queried since the last reset."""
        return len(self._seen)

    def spent(self) -> int:
        return self.queries if self.budget_unit == "textattack" else self.distinct_queries

    @property
    def budget_left(self) -> float:
        return float("inf") if self.query_budget is None else self.query_budget - self.spent()

    def count_extra(self, n: int) -> None:
        """Model calls made outside `probs` (the white-box attack's gradient steps): n in both units."""
        self.queries += n
        self._seen.update(("#extra", self.distinct_queries + i) for i in range(n))

    def check_time(self) -> None:
        if self.deadline is not None and time.perf_counter() > self.deadline:
            raise AttackTimeout

    def clear_cache(self) -> None:
        """Forget cached outputs (benchmarks time cold runs; a changed model must not reuse them)."""
        self._cache.clear()
        self._caches_by_precision.clear()
        self.total_forward_rows = 0

    # --- model calls -----------------------------------------------------------------------------
    def _allowed(self, keys: list[tuple]) -> int:
        """How many of `keys` (a prefix) the budget lets through."""
        if self.query_budget is None:
            return len(keys)
        left = max(0, int(self.budget_left))
        if self.budget_unit == "textattack":
            allowed = min(len(keys), left)
        else:
            allowed, new = len(keys), set()
            for i, k in enumerate(keys):
                if k not in self._seen and k not in new:
                    if len(new) >= left:
                        allowed = i
                        break
                    new.add(k)
        if allowed < len(keys) or self.spent() + self._cost(keys[:allowed]) >= self.query_budget:
            self.exhausted = True  # as TextAttack: the search is over once the budget is reached
        return allowed

    def _cost(self, keys: list[tuple]) -> int:
        return len(keys) if self.budget_unit == "textattack" else len(set(keys) - self._seen)

    def probs(self, examples: list[Example]) -> np.ndarray:
        self.check_time()
        keys = [_key(e) for e in examples]
        keys = keys[: self._allowed(keys)]
        self.queries += len(keys)
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

    @contextmanager
    def in_precision(self, precision: str):
        """Query under another precision for a while, with that precision's own cache (outputs of one
        precision must never answer for another)."""
        runtime.resolve_precision(precision, self.device)
        saved = self.precision, self._cache
        self._caches_by_precision[self.concrete_precision] = self._cache
        self.precision = precision
        self._cache = self._caches_by_precision.setdefault(self.concrete_precision, OrderedDict())
        try:
            yield self
        finally:
            self.precision, self._cache = saved

    def full_precision_probs(self, example: Example) -> np.ndarray:
        """One uncached fp32 call (the re-check of a success found under bf16/fp16); counted in both units."""
        self.queries += 1
        self._seen.add(("#fp32",) + _key(example))
        return self._forward([_key(example)], precision="fp32")[0]

    def encode(self, keys: list[tuple[str, str | None]]) -> dict:
        a = [k[0] for k in keys]
        b = [k[1] for k in keys] if self.task.is_pair else None
        enc = tokenize_pad(
            self.tokenizer, a, b, max_length=self.max_length, pad_to_max_length=self.mode.pad_to_max_length
        )
        if self.pad_to_multiple_of and not self.mode.pad_to_max_length:
            enc = pad_to_multiple(enc, self.pad_to_multiple_of, self.tokenizer, self.position_limit)
        return enc

    def token_length(self, example: Example) -> int:
        """Number of tokens of an example before truncation (to report inputs longer than the maximum)."""
        return len(self.tokenizer(example.text_a, example.text_b, truncation=False)["input_ids"])

    def visible_chars(self, example: Example, field: str) -> int | None:
        """How many characters of `field` the model still reads after truncation to `max_length` tokens
        (None when nothing of it is cut, or when the tokenizer cannot map tokens to characters)."""
        if self.token_length(example) <= self.max_length:
            return None
        if not getattr(self.tokenizer, "is_fast", False):
            return None
        enc = self.tokenizer(
            example.text_a, example.text_b, truncation=True, max_length=self.max_length, return_offsets_mapping=True
        )
        which = 0 if field == "text_a" else 1
        ends = [
            e for (s, e), seq in zip(enc["offset_mapping"], enc.sequence_ids(), strict=True) if seq == which and e > s
        ]
        return max(ends, default=0)

    def _forward(self, keys: list[tuple[str, str | None]], precision: str | None = None) -> np.ndarray:
        batch = self.batch_size
        device = self.device
        # Sort by length so each batch pads little; results go back to the callers' order.
        order = sorted(range(len(keys)), key=lambda i: len(keys[i][0]) + len(keys[i][1] or ""))
        result = np.empty((len(keys), self.task.num_labels), dtype=np.float32)
        precision = precision or self.precision
        with torch.no_grad(), runtime.autocast(device, precision):
            for s in range(0, len(order), batch):
                idx = order[s : s + batch]
                enc = runtime.to_device(model_inputs(self.encode([keys[i] for i in idx])), device)
                with runtime.threads_for_forward(len(idx), device, precision, self.bf16_one_thread_below):
                    logits = self.model(**enc).logits.float()
                result[idx] = torch.softmax(logits, dim=-1).cpu().numpy()
                self.total_forward_rows += len(idx)
        return result
