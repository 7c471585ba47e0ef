"""Seconds of work: the monotonic clock less the minutes this process spent stopped.

Long runs get paused: the project's CPU queue stops its studies (SIGSTOP, then SIGCONT) while the test suite runs,
and a user presses Ctrl-Z. `time.perf_counter` counts those minutes as work, so an attacked example's `seconds`, a
training's `train_time_s`, the bench's calibration from them and its forecast of a partly run job all swell: one
16-minute pause made a genetic-attack example take 988 s and the forecast read 1,050 minutes for an attack of ~36.

A daemon thread sleeps a second at a time; when it wakes PAUSE_S or more late, no thread of this process ran in
between (a stopped process runs none), and that gap is taken out. PAUSE_S is high because a thread also wakes late
when it waits for the GIL or the CPU: no call here holds the GIL for half a minute, and a shorter pause counted as
work costs little. (A machine's suspend is already outside: perf_counter does not advance through it on Linux.)
"""

from __future__ import annotations

import os
import threading
import time

TICK_S = 1.0
PAUSE_S = 30.0


class PauseAwareClock:
    """`seconds()`: perf_counter less every pause seen so far; `paused()`: the pauses' sum."""

    def __init__(self, tick_s: float = TICK_S, pause_s: float = PAUSE_S):
        self.tick_s, self.pause_s = tick_s, pause_s
        self._paused = 0.0
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def _watch(self) -> None:
        last = time.perf_counter()
        while True:
            time.sleep(self.tick_s)
            now = time.perf_counter()
            late = now - last - self.tick_s
            if late >= self.pause_s:
                self._paused += late
            last = now

    def _ensure_watching(self) -> None:
        if self._thread is None:
            with self._lock:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._watch, name="robustft-pause-watch", daemon=True)
                    self._thread.start()

    def seconds(self) -> float:
        self._ensure_watching()
        return time.perf_counter() - self._paused

    def paused(self) -> float:
        self._ensure_watching()
        return self._paused

    def forget_thread(self) -> None:
        """In a forked child: the thread did not come along; the next call starts one."""
        self._thread = None


_CLOCK = PauseAwareClock()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_CLOCK.forget_thread)


def working_seconds() -> float:
    """A point in time for measuring work: differences between two calls leave out the pauses in between."""
    return _CLOCK.seconds()


def paused_seconds() -> float:
    """How long this process has been stopped (pauses of PAUSE_S or more) since it first asked the clock."""
    return _CLOCK.paused()
