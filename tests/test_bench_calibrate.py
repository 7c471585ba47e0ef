"""The bench's estimate scaled to the machine it runs on, from that machine's finished jobs: a machine 4x slower
than the one the rates were measured on must not have a deadline start trainings the session's end cuts off."""

import dataclasses
import datetime
import json

import pytest

from robustft import runtime
from robustft.bench.costs import machine_factors, measured_seconds, work_of
from robustft.bench.pricing import seconds
from robustft.bench.pricing.rates import slowdown
from robustft.bench.run import bench
from robustft.config import TrainConfig
from test_bench import tiny_bench


def finished_training(root, name: str, train_time_s: float, machine: dict) -> TrainConfig:
    """A finished training job of some bench under `root`, as run folders record it."""
    folder = root / name / "cells" / "bert-sst2-n32-s0"
    folder.mkdir(parents=True)
    cfg = TrainConfig(model="minilm", task="sst2", n_train=32, n_dev=16, epochs=1, threads=1)
    about = {"robustft_run": 1, "verb": "train", "hash": name, "config": dataclasses.asdict(cfg), "machine": machine}
    (folder / "config.json").write_text(json.dumps(about))
    (folder / "metrics.json").write_text(json.dumps({"complete": True, "train_time_s": train_time_s}))
    return cfg


def slow_training(root, name: str) -> None:
    """A finished training of this machine that took 10,000x its estimate."""
    cfg = finished_training(root, name, 0.0, runtime.machine())
    metrics = root / name / "cells" / "bert-sst2-n32-s0" / "metrics.json"
    metrics.write_text(
        json.dumps({"complete": True, "train_time_s": 1e4 * seconds(work_of("train", cfg)) * slowdown(1)})
    )


def test_the_factor_is_measured_over_expected_time_of_this_machine_s_finished_jobs_only(tmp_path):
    cfg = finished_training(tmp_path, "earlier", 100.0, runtime.machine())
    finished_training(tmp_path, "elsewhere", 1e6, {**runtime.machine(), "cpu": "another CPU"})
    factor, n = machine_factors(tmp_path)["train"]
    assert n == 1  # the other machine's job is left out
    assert factor == pytest.approx(100.0 / (seconds(work_of("train", cfg)) * slowdown(1)))
    assert "attack" not in machine_factors(tmp_path)  # no attack finished here: that estimate stands as it is


def test_a_real_bench_calibrates_its_next_estimate_from_its_own_jobs(tiny_model_dir, tmp_path):
    bench(tiny_bench(tiny_model_dir, tmp_path / "runs" / "tiny"), only="bert/*")
    factors = machine_factors(tmp_path / "runs")
    assert set(factors) == {"train", "attack"} and all(n == 1 for _, n in factors.values())
    train = tmp_path / "runs" / "tiny" / "cells" / "bert-sst2-n32-s0"
    cfg = TrainConfig(**json.loads((train / "config.json").read_text())["config"])
    assert factors["train"][0] == pytest.approx(
        measured_seconds(train) / (seconds(work_of("train", cfg)) * slowdown(1))
    )


def test_a_deadline_trusts_this_machine_s_measured_speed(tiny_model_dir, tmp_path, caplog):
    """Uncalibrated, a 32-example training is expected to take seconds and starts an hour before the deadline; on a
    machine whose finished trainings took 10,000x their estimate it does not."""
    in_an_hour = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1)
    cfg = tiny_bench(tiny_model_dir, tmp_path / "runs" / "tiny", deadline=in_an_hour.strftime("%Y-%m-%dT%H:%M"))
    slow_training(tmp_path / "runs", "earlier")
    result = bench(cfg, only="bert/*")
    assert set(result["jobs"].values()) == {"todo"}
    assert "not starting bert/sst2/n32/s0: its training and attacks would not end before the deadline" in caplog.text


def test_a_deadline_prices_each_cell_with_the_jobs_finished_since_the_bench_started(tiny_model_dir, tmp_path):
    """A session's first trainings show how slow this machine is today: a cell that looked in time when the bench
    started is not started once a training finished meanwhile took 10,000x its estimate."""
    from robustft.bench.matrix import expand
    from robustft.bench.run import deadline_for

    in_an_hour = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1)
    cfg = tiny_bench(tiny_model_dir, tmp_path / "runs" / "tiny", deadline=in_an_hour.strftime("%Y-%m-%dT%H:%M"))
    jobs = expand(cfg)
    cell = next(j.cell for j in jobs if j.kind == "train")
    deadline = deadline_for(cfg, jobs, jobs, tmp_path / "runs")
    assert not deadline(cell)
    slow_training(tmp_path / "runs", "meanwhile")
    assert deadline(cell)


def test_the_printed_estimate_says_whether_and_how_it_was_scaled():
    from robustft.bench.pricing.forecast import describe_factors

    assert describe_factors({}).startswith("not calibrated to this machine yet")
    scaled = describe_factors({"train": (3.54, 3), "attack": (0.86, 5)})
    assert scaled.endswith("trainings x3.5 (3 finished here), attacks x0.9 (5 finished here)")
