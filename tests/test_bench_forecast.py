"""The wall time `robustft bench` forecasts for several workers: their shared queue, simulated in the bench's
order, with evaluations and attacks waiting for their model's training."""

import pytest

from robustft.bench.matrix import Job
from robustft.bench.pricing.forecast import describe_wall_time, wall_seconds


def job(id_: str, kind: str = "train", cell: str | None = None) -> Job:
    return Job(id=id_, kind=kind, config=None, cell=cell or id_, method="bert", task="sst2")


def cell(name: str) -> list[Job]:
    return [job(name), job(f"{name} attack", "attack", name)]


def test_independent_cells_share_the_workers():
    jobs = cell("a") + cell("b")
    assert wall_seconds(jobs, [10, 5, 10, 5], workers=1) == 30
    assert wall_seconds(jobs, [10, 5, 10, 5], workers=2) == 15


def test_an_attack_waits_for_its_training_while_a_free_worker_has_nothing_else():
    jobs = cell("a") + [job("b")]
    # worker 1 trains b (0-2), then waits for a's training (ends at 10) to attack it: 10-20
    assert wall_seconds(jobs, [10, 10, 2], workers=2) == 20


def test_a_free_worker_skips_a_waiting_attack_for_a_later_job_it_can_start():
    jobs = cell("a") + [job("b"), job("c")]
    # worker 1: b (0-2), then c (2-5) rather than waiting; a's attack starts at 10 on whichever is free
    assert wall_seconds(jobs, [10, 4, 2, 3], workers=2) == 14


def test_an_attack_of_a_model_trained_before_starts_at_once():
    jobs = [job("a attack", "attack", "a"), job("b")]  # a's training is not among the jobs left: it is done
    assert wall_seconds(jobs, [6, 6], workers=2) == 6


def test_the_order_is_the_bench_s_even_where_another_would_end_sooner():
    long_last = [job("s1"), job("s2"), job("long")]
    assert wall_seconds(long_last, [5, 5, 10], workers=2) == 15  # the long job starts when s1 ends
    assert wall_seconds(long_last[::-1], [10, 5, 5], workers=2) == 10


def test_nothing_left_takes_no_time():
    assert wall_seconds([], [], workers=2) == 0


def test_the_forecast_names_the_wall_time_only_for_several_workers(monkeypatch):
    from robustft.bench.pricing import forecast

    monkeypatch.setattr(forecast, "slowdown", lambda threads: 1.5)
    jobs = cell("a") + cell("b")
    seconds = [600.0] * len(jobs)
    assert describe_wall_time(jobs, seconds, workers=1, threads=None) == "about 40 min as one process"
    two = describe_wall_time(jobs, seconds, workers=2, threads=1)
    assert two == "about 40 min as one process, about 30 min of wall time on 2 workers"  # 2 x 10 min x 1.5


@pytest.mark.parametrize("workers", [0, 1])
def test_one_worker_or_fewer_runs_the_jobs_one_after_another(workers):
    assert wall_seconds(cell("a"), [3, 4], workers=workers) == 7


def test_the_forecast_says_when_it_would_end_from_a_start_time(monkeypatch):
    from robustft.bench.pricing import forecast

    monkeypatch.setattr(forecast, "slowdown", lambda threads: 1.0)
    start = 1_796_000_000.0  # 2026-11-30 00:53:20 UTC
    text = describe_wall_time(cell("a") + cell("b"), [600.0] * 4, workers=2, threads=1, start=start)
    assert text.endswith("about 20 min of wall time on 2 workers, ending about 2026-11-30 01:13 UTC")
