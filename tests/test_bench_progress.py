"""A partly run bench job is priced at its own measured rate: a resumed IM + RIFT training that measured hours was
printed as minutes by the estimate's rates, and a deadline or a schedule trusting that number plans wrong."""

import json

import pytest

from robustft.bench.costs import expected_seconds, price_jobs, priced
from robustft.bench.matrix import expand
from robustft.bench.plan import status
from robustft.bench.pricing import seconds_left
from robustft.bench.pricing.forecast import describe_jobs
from robustft.bench.pricing.rates import slowdown
from test_bench import tiny_bench


def jobs_of(tmp_path):
    """The tiny bench's jobs (3 epochs of 32 examples a cell; its PWWS attack takes 2 dev examples)."""
    return expand(tiny_bench("minilm", tmp_path / "tiny", train={"epochs": 3, "n_dev": 16, "max_length": 32}))


def started(job, threads: int) -> None:
    """The run folder's config.json as a job that started with `threads` threads writes it."""
    job.folder.mkdir(parents=True, exist_ok=True)
    about = {"robustft_run": 1, "verb": job.kind, "hash": "h", "config": {"threads": threads}}
    (job.folder / "config.json").write_text(json.dumps(about))


def checkpointed(job, examples: int, train_time_s: float) -> None:
    newest = job.folder / "checkpoint" / "000002-step4"
    newest.mkdir(parents=True)
    (newest / "manifest.json").write_text("{}")
    (newest / "state.json").write_text(json.dumps({"loop": {"examples": examples, "train_time_s": train_time_s}}))


def test_a_resumed_training_has_its_checkpoint_s_rate_times_the_examples_it_has_left(tmp_path):
    train = next(j for j in jobs_of(tmp_path) if j.kind == "train")
    assert seconds_left(priced(train)) is None  # nothing ran: the estimate prices it
    started(train, threads=1)
    assert seconds_left(priced(train)) is None  # started, no checkpoint yet
    checkpointed(train, examples=8, train_time_s=40.0)  # 5 s an example on one thread; 3 x 32 - 8 to go
    assert seconds_left(priced(train)) == pytest.approx(5.0 * 88 / slowdown(1))


def test_a_partly_run_attack_has_its_mean_seconds_an_example_times_those_left_and_a_torn_line_is_left_alone(
    tmp_path,
):
    attack = next(j for j in jobs_of(tmp_path) if j.kind == "attack")
    started(attack, threads=2)
    examples = attack.folder / "examples.jsonl"
    examples.write_text(json.dumps({"index": 0, "seconds": 3.0}) + '\n{"index": 1, "seco')  # still being written
    assert seconds_left(priced(attack)) == pytest.approx(3.0 * 1 / slowdown(2))
    assert examples.read_text().endswith('"seco')  # only read: the running attack owns the file


def test_the_job_list_shows_a_partly_run_job_at_its_own_rate_and_the_rest_at_the_estimate(tmp_path):
    jobs = jobs_of(tmp_path)
    train = next(j for j in jobs if j.kind == "train")
    started(train, threads=2)
    checkpointed(train, examples=1, train_time_s=600.0)  # 10 minutes an example: far from any estimate
    here = price_jobs(jobs, jobs, {})
    listed = describe_jobs([(status(j), s, j.id) for j, s in zip(jobs, here, strict=True)], {}).splitlines()
    estimate = expected_seconds(jobs, jobs)
    assert f"partial  {600.0 * 95 / slowdown(2) / 60:8.1f}  {train.id}" in listed
    other = next(i for i, j in enumerate(jobs) if j.kind == "train" and j is not train)
    assert f"todo     {estimate[other] / 60:8.1f}  {jobs[other].id}" in listed
    assert listed[-1].endswith("partly run jobs at their own rate)")
