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

Several threads may attack one example each with one victim (`share_calls`, see lockstep.py): what belongs to
an example (its counts, budget, time limit, the precision it is attacked in) is kept per thread; the model calls
of all of them are answered together, and the caches are written only inside those calls.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import torch

from robustft import runtime
from robustft.attacks.lockstep import Lockstep
from robustft.clock import working_seconds
from robustft.data.batching import model_inputs, pad_tokenized, padded_cost_batches, tokenize_rows
from robustft.data.example import Example
from robustft.data.tasks import Task, get_task
from robustft.defenses.ensemble import as_ensemble
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


@dataclass
class ExampleState:
    """What the victim counts for the example a thread is attacking."""

    query_budget: int | None
    order: int = 0  # the example's index: shared calls answer requests in this order
    queries: int = 0  # TextAttack's unit, since the last reset
    seen: set = field(default_factory=set)
    exhausted: bool = False
    deadline: float | None = None
    precision: str | None = None  # set by `in_precision` for this thread only


class _PerThread(threading.local):
    state: ExampleState | None = None


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
        compile_model: bool = False,
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
        # a SAFER / RanMASK / DNE model answers by its ensemble of noisy copies (defenses/ensemble.py)
        self.model = as_ensemble(model, tokenizer, self.task).eval()
        self.tokenizer = tokenizer
        runtime.resolve_precision(precision, self.device)  # fail early on a bad name
        self._precision = precision
        limit = min(
            getattr(tokenizer, "model_max_length", 512) or 512,
            getattr(model.config, "max_position_embeddings", 512) or 512,
        )
        self.max_length = min(max_length, limit) if max_length else limit
        self.position_limit = limit
        self.pad_to_multiple_of = pad_to_multiple_of
        self.bf16_one_thread_below = runtime.BF16_ONE_THREAD_BELOW_ROWS  # 0: small bf16 calls keep every thread
        self.split_for_padding = mode.batched  # False: plain chunks of batch_size rows (the code before the split)
        # torch.compile for the reduced-precision calls; fp32 calls (the re-checks of successes) stay eager
        self.compile_model = compile_model
        self._compiled = None
        self.batch_size = batch_size if mode.batched else 1
        self.mode = mode
        self.budget_unit = budget_unit
        self._default_budget = query_budget
        self.cache_size = cache_size
        self._caches: dict[str, OrderedDict[tuple, np.ndarray]] = {}  # one per concrete precision
        self._thread = _PerThread()
        self._lockstep: Lockstep | None = None
        self.total_forward_rows = 0  # rows actually run through the model (for benchmarks)

    @property
    def device(self) -> torch.device:
        return runtime.model_device(self.model)

    @property
    def precision(self) -> str:
        """The precision this thread queries in: the victim's, or `in_precision`'s while it lasts."""
        return self._state.precision or self._precision

    @precision.setter
    def precision(self, value: str) -> None:
        self._precision = value

    @property
    def concrete_precision(self) -> str:
        """'bf16', 'fp16' or 'fp32' on the model's current device."""
        return runtime.resolve_precision(self.precision, self.device)

    # --- per-example accounting (per thread) -------------------------------------------------------
    @property
    def _state(self) -> ExampleState:
        if self._thread.state is None:
            self._thread.state = ExampleState(self._default_budget)
        return self._thread.state

    def reset(self, query_budget: int | None = ..., time_limit: float | None = None, order: int = 0) -> None:
        """Start counting for a new attacked example (its index: `order`); optionally set its query budget and
        time limit (s)."""
        old = self._state
        budget = old.query_budget if query_budget is ... else query_budget
        deadline = None if time_limit is None else working_seconds() + time_limit
        self._thread.state = ExampleState(budget, order=order, deadline=deadline, precision=old.precision)

    @property
    def query_budget(self) -> int | None:
        return self._state.query_budget

    @property
    def queries(self) -> int:
        """Queries of this thread's example in TextAttack's unit."""
        return self._state.queries

    @property
    def exhausted(self) -> bool:
        return self._state.exhausted

    @property
    def deadline(self) -> float | None:
        return self._state.deadline

    @deadline.setter
    def deadline(self, value: float | None) -> None:
        self._state.deadline = value

    @property
    def distinct_queries(self) -> int:
        """Distinct inputs queried since the last reset."""
        return len(self._state.seen)

    def spent(self) -> int:
        return self.queries if self.budget_unit == "textattack" else self.distinct_queries

    @property
    def budget_left(self) -> float:
        return float("inf") if self.query_budget is None else self.query_budget - self.spent()

    def count_extra(self, n: int) -> None:
        """Model calls made outside `probs` (the white-box attack's gradient steps): n in both units."""
        state = self._state
        state.queries += n
        state.seen.update(("#extra", len(state.seen) + i) for i in range(n))

    def check_time(self) -> None:
        if self.deadline is not None and working_seconds() > self.deadline:
            raise AttackTimeout

    def clear_cache(self) -> None:
        """Forget cached outputs (benchmarks time cold runs; a changed model must not reuse them)."""
        self._caches.clear()
        self.total_forward_rows = 0

    @contextmanager
    def share_calls(self, threads: int):
        """While it lasts, `threads` threads attack one example each, each inside the yielded lockstep's `member()`,
        and the thread that entered it answers their model calls together in its `serve()` (lockstep.py)."""
        self._lockstep = Lockstep(self._answer_all, threads)
        try:
            yield self._lockstep
        finally:
            self._lockstep = None

    # --- model calls -----------------------------------------------------------------------------
    def _allowed(self, keys: list[tuple]) -> int:
        """How many of `keys` (a prefix) the budget lets through."""
        if self.query_budget is None:
            return len(keys)
        left = max(0, int(self.budget_left))
        seen = self._state.seen
        if self.budget_unit == "textattack":
            allowed = min(len(keys), left)
        else:
            allowed, new = len(keys), set()
            for i, k in enumerate(keys):
                if k not in seen and k not in new:
                    if len(new) >= left:
                        allowed = i
                        break
                    new.add(k)
        if allowed < len(keys) or self.spent() + self._cost(keys[:allowed]) >= self.query_budget:
            self._state.exhausted = True  # as TextAttack: the search is over once the budget is reached
        return allowed

    def _cost(self, keys: list[tuple]) -> int:
        return len(keys) if self.budget_unit == "textattack" else len(set(keys) - self._state.seen)

    def probs(self, examples: list[Example]) -> np.ndarray:
        self.check_time()
        keys = [_key(e) for e in examples]
        keys = keys[: self._allowed(keys)]
        self._state.queries += len(keys)
        self._state.seen.update(keys)
        return self._answer(keys, self.precision, self.mode.cache)

    def predict(self, examples: list[Example]) -> np.ndarray:
        return self.probs(examples).argmax(-1)

    @contextmanager
    def in_precision(self, precision: str):
        """Query under another precision for a while (this thread only), with that precision's own cache (outputs
        of one precision must never answer for another)."""
        runtime.resolve_precision(precision, self.device)
        state = self._state
        saved, state.precision = state.precision, precision
        try:
            yield self
        finally:
            self._state.precision = saved

    def full_precision_probs(self, example: Example) -> np.ndarray:
        """One uncached fp32 call (the re-check of a success found under bf16/fp16); counted in both units."""
        self._state.queries += 1
        self._state.seen.add(("#fp32",) + _key(example))
        return self._answer([_key(example)], "fp32", cached=False)[0]

    def _tokenized(self, keys: list[tuple[str, str | None]]):
        b = [k[1] for k in keys] if self.task.is_pair else None
        return tokenize_rows(self.tokenizer, [k[0] for k in keys], b, max_length=self.max_length)

    def _padded(self, rows) -> dict:
        enc = pad_tokenized(self.tokenizer, rows, self.mode.pad_to_max_length, self.max_length)
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

    def _answer(self, keys: list[tuple], precision: str, cached: bool) -> np.ndarray:
        if not keys:
            return np.empty((0, self.task.num_labels), dtype=np.float32)
        if self._lockstep is not None:
            return self._lockstep.ask(self._state.order, (keys, precision, cached))
        return self._answer_all([(keys, precision, cached)])[0]

    def _answer_all(self, requests: list[tuple[list[tuple], str, bool]]) -> list[np.ndarray]:
        """Each request's (keys, precision, cached) outputs: from its precision's cache where it may, else from one
        model call per (precision, cached) for the distinct keys missing across all requests. Outputs are read
        before new ones are cached, so an eviction cannot take a row a request still needs."""
        missing: dict[tuple[str, bool], dict[tuple, None]] = {}
        for keys, precision, cached in requests:
            cache = self._cache_of(precision)
            wanted = missing.setdefault((precision, cached), {})
            wanted.update((k, None) for k in keys if not (cached and k in cache))
        fresh = {
            group: dict(zip(keys, self._forward(list(keys), precision=group[0]), strict=True))
            for group, keys in missing.items()
            if keys
        }
        out = []
        for keys, precision, cached in requests:
            new, cache = fresh.get((precision, cached), {}), self._cache_of(precision)
            rows = np.empty((len(keys), self.task.num_labels), dtype=np.float32)
            for i, k in enumerate(keys):
                if k in new:
                    rows[i] = new[k]
                else:
                    rows[i] = cache[k]
                    cache.move_to_end(k)
            out.append(rows)
        for (precision, cached), new in fresh.items():
            if cached:
                cache = self._cache_of(precision)
                cache.update(new)
                while len(cache) > self.cache_size:
                    cache.popitem(last=False)
        return out

    def _model_for(self, precision: str):
        if not self.compile_model or runtime.resolve_precision(precision, self.device) == "fp32":
            return self.model
        if self._compiled is None:
            self._compiled = torch.compile(self.model, dynamic=True)  # compiles on the first call, per shape family
        return self._compiled

    def _cache_of(self, precision: str) -> OrderedDict:
        return self._caches.setdefault(runtime.resolve_precision(precision, self.device), OrderedDict())

    def _forward(self, keys: list[tuple[str, str | None]], precision: str | None = None) -> np.ndarray:
        device = self.device
        rows = self._tokenized(keys)
        # Rows grouped by token length, a group split where its padding would cost more than another call; results
        # go back to the callers' order.
        overhead = runtime.call_overhead_tokens(device) if self.split_for_padding else float("inf")
        batches = padded_cost_batches([len(ids) for ids in rows["input_ids"]], self.batch_size, overhead)
        result = np.empty((len(keys), self.task.num_labels), dtype=np.float32)
        precision = precision or self.precision
        with torch.no_grad(), runtime.autocast(device, precision):
            for idx in batches:
                batch = self._padded({name: [values[i] for i in idx] for name, values in rows.items()})
                enc = runtime.to_device(model_inputs(batch), device)
                with runtime.threads_for_forward(len(idx), device, precision, self.bf16_one_thread_below):
                    logits = self._model_for(precision)(**enc).logits.float()
                result[idx] = torch.softmax(logits, dim=-1).cpu().numpy()
                self.total_forward_rows += len(idx)
        return result
