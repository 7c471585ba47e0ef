"""Several attack threads share every model call: batching across examples.

A greedy search asks the model about a handful of candidates at a time (TextFooler about 4 rows per call on
SST-2) and cannot ask for more without changing the search: each word's candidates depend on the swap kept
before it. Several examples attacked at once, one thread each, can share the calls instead. Every model call
is a meeting point: a thread hands in its request and waits; once every thread still working has handed one
in, one serving thread answers them all with one batched call and wakes them. The serving thread is always the
same one (the caller's), so the model's CPU thread pool is the one an attack without sharing uses: each Python
thread that runs a model gets its own OpenMP team, and idle teams of other threads compete for the cores.

Which requests share a call thus depends only on which examples are in flight, never on thread timing, and a
call's requests are answered in the order of their examples' indices, so a run repeats exactly. Between calls the
members take turns: one runs at a time, until it asks or leaves, so code that is not thread-safe (NLTK's WordNet
reader and tag maps, caches) never runs in two threads at once. Python work is serialised by the GIL anyway; what
the threads gain is batch size.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any


@dataclass
class _Request:
    order: int
    payload: Any
    result: Any = None
    error: BaseException | None = None
    done: bool = False


class Lockstep:
    """`answer(payloads) -> results` is called by the thread running `serve`, with the requests of every member in
    `order`; `ask` blocks until its request is answered (or re-raises the error the call raised). `members` are
    counted before any thread starts; each thread works inside `member()`, which gives it its turns and, at the end,
    takes it out, so a call never waits for a thread that has finished; `serve` returns once every member has
    left."""

    def __init__(self, answer: Callable[[list], list], members: int):
        self._answer = answer
        self._cond = threading.Condition()
        self._members = members
        self._waiting: list[_Request] = []
        self._turn = threading.Lock()  # held by the one member running between calls

    @contextmanager
    def member(self):
        self._turn.acquire()
        try:
            yield self
        finally:
            self._turn.release()
            with self._cond:
                self._members -= 1
                self._cond.notify_all()

    def ask(self, order: int, payload: Any) -> Any:
        """From inside `member()`: hand in a request, let another member run, and take a turn again once answered."""
        request = _Request(order, payload)
        with self._cond:
            self._waiting.append(request)
            self._cond.notify_all()
        self._turn.release()
        with self._cond:
            while not request.done:
                self._cond.wait()
        self._turn.acquire()
        if request.error is not None:
            raise request.error
        return request.result

    def serve(self) -> None:
        with self._cond:
            while True:
                while self._members > 0 and len(self._waiting) < self._members:
                    self._cond.wait()
                if not self._waiting:
                    return  # every member has left
                self._answer_all()

    def _answer_all(self) -> None:  # called with the lock held, every member waiting
        batch, self._waiting = sorted(self._waiting, key=lambda r: r.order), []
        try:
            for request, result in zip(batch, self._answer([r.payload for r in batch]), strict=True):
                request.result = result
        except BaseException as exc:  # every request of the failed call gets the error, in its own thread
            for request in batch:
                request.error = exc
        for request in batch:
            request.done = True
        self._cond.notify_all()
