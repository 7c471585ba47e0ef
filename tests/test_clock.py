"""robustft.clock: a process stopped with SIGSTOP (the CPU queue's pause while the tests run, Ctrl-Z) does not count
the stopped minutes as work, so examples' seconds, train_time_s and the bench's forecasts stay true."""

import os
import signal
import subprocess
import sys
import time

import pytest

from robustft.clock import PauseAwareClock

CHILD = """
import time
from robustft.clock import PauseAwareClock
clock = PauseAwareClock(tick_s=0.05, pause_s=0.5)
work, wall = clock.seconds(), time.perf_counter()
print("ready", flush=True)
while time.perf_counter() - wall < 3.0:
    time.sleep(0.01)
print(clock.seconds() - work, time.perf_counter() - wall, clock.paused(), flush=True)
"""


@pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="needs POSIX job control")
def test_a_stopped_process_leaves_the_stopped_time_out_of_its_working_seconds():
    child = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "ready"
        time.sleep(0.5)
        os.kill(child.pid, signal.SIGSTOP)
        time.sleep(1.5)
        os.kill(child.pid, signal.SIGCONT)
        working, wall, paused = map(float, child.stdout.readline().split())
    finally:
        child.kill()
        child.wait()
    assert 1.3 <= paused <= 2.5  # the 1.5 s stop, seen by a tick that came late
    assert wall >= 3.0 and working == pytest.approx(wall - paused, abs=0.05)


def test_a_running_process_counts_all_of_its_time():
    clock = PauseAwareClock(tick_s=0.01, pause_s=2.0)
    work, wall = clock.seconds(), time.perf_counter()
    time.sleep(0.3)
    assert clock.paused() == 0.0
    assert clock.seconds() - work == pytest.approx(time.perf_counter() - wall, abs=0.01)
