"""Scaling out: shards of attacks, evaluations and benches give exactly one process's records; training under
torchrun / accelerate launch (2 CPU processes, gloo) gives one process's metrics, keeps the ranks in sync for every
objective, resumes exactly after a rank is killed, and logs to TensorBoard on request.

The multi-process tests start real launchers in subprocesses (`tests/scale_driver.py`), each well under a minute."""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from attack_helpers import GOOD
from robustft import runs
from robustft.attacks.example_loop import run_attack
from robustft.attacks.run import merge as merge_attack
from robustft.cli import main
from robustft.config import AttackConfig, EvalConfig, TrainConfig, config_hash, parse_shard
from robustft.data.batching import Encoded, _class_balanced, rank_slice
from robustft.data.example import Example
from robustft.errors import ConfigError
from robustft.evaluation.run import evaluate
from robustft.training import loop
from train_helpers import tiny_train_config

DRIVER = str(Path(__file__).with_name("scale_driver.py"))
TIMING = ("seconds", "avg_seconds_per_example", "wall_seconds_this_session", "paused_seconds_this_session")


def lines(path: Path) -> list[dict]:
    """The JSONL records without their timing fields."""
    return [{k: v for k, v in json.loads(line).items() if k not in TIMING} for line in path.read_text().splitlines()]


def without_timing(metrics: dict) -> dict:
    return {k: v for k, v in metrics.items() if k not in TIMING}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(args: list[str], launcher: str = "torchrun", env: dict | None = None, check: bool = True):
    """`robustft ARGS` in 2 CPU processes under torchrun or accelerate launch."""
    if launcher == "torchrun":
        start = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
    else:
        start = [
            sys.executable,
            "-m",
            "accelerate.commands.launch",
            "--multi_gpu",
            "--num_processes",
            "2",
            "--num_machines",
            "1",
            "--mixed_precision",
            "no",
            "--dynamo_backend",
            "no",
            "--main_process_port",
            str(free_port()),
        ]
    src = str(Path(__file__).resolve().parents[1] / "src")
    full_env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", ""),
        **(env or {}),
    }
    done = subprocess.run([*start, DRIVER, *args], capture_output=True, text=True, env=full_env, timeout=300)
    if check and done.returncode != 0:
        raise AssertionError(f"{launcher} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}")
    return done


# ---- shards: slicing, config, merge ---------------------------------------------------------------------------


def test_shard_is_i_of_n_and_not_part_of_the_settings_hash():
    assert parse_shard("1/3") == (1, 3)
    for bad in ("3/3", "-1/2", "1", "a/b", "0/0"):
        with pytest.raises(ConfigError, match="shard"):
            AttackConfig(model="m", shard=bad).validate()
    assert config_hash(AttackConfig(model="m", shard="0/2")) == config_hash(AttackConfig(model="m"))
    assert config_hash(EvalConfig(model="m", shard="1/2")) == config_hash(EvalConfig(model="m"))
    assert runs.shard_indices(7, (1, 3)) == [1, 4]
    assert sorted(runs.shard_indices(7, (0, 3)) + [1, 4] + runs.shard_indices(7, (2, 3))) == list(range(7))


def test_the_launcher_environment_decides_rank_device_and_precision(monkeypatch):
    from robustft import runtime

    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "ACCELERATE_MIXED_PRECISION"):
        monkeypatch.delenv(name, raising=False)
    assert runtime.world() == runtime.World(0, 1, 0) and runs.shard_of(AttackConfig(model="m")) is None
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert runtime.world() == runtime.World(3, 4, 1) and runs.shard_of(AttackConfig(model="m")) == (3, 4)
    assert runs.shard_of(AttackConfig(model="m", shard="0/2")) == (0, 2)  # --shard wins
    with runtime.alone():  # a bench job under torchrun
        assert runtime.world() == runtime.World() and runs.shard_of(AttackConfig(model="m")) is None
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert runtime.pick_device("auto") == torch.device("cuda", 1) == runtime.pick_device("cuda")
    assert runtime.pick_device("cuda:0") == torch.device("cuda", 0)
    monkeypatch.setenv("ACCELERATE_MIXED_PRECISION", "bf16")
    assert runtime.launcher_precision("auto") == "bf16" and runtime.launcher_precision("fp32") == "fp32"
    monkeypatch.setenv("ACCELERATE_MIXED_PRECISION", "no")
    assert runtime.launcher_precision("auto") == "auto"
    monkeypatch.setenv("RANK", "4")
    with pytest.raises(ConfigError, match="RANK"):
        runtime.world()


def test_rank_slices_keep_class_balance_and_weight_to_the_global_mean():
    items = [Encoded(Example(f"t{i}", i % 2), [1] * (3 + i % 5), None) for i in range(40)]
    import random

    batch = _class_balanced(items, 8, random.Random(0))[0]
    losses = {i: float(i) for i in batch}
    total = 0.0
    for rank in range(2):
        part, weight = rank_slice(batch, rank, 2)
        assert sorted(items[i].example.label for i in part) == [0, 0, 1, 1]  # 2 of each class on each rank
        total += weight * sum(losses[i] for i in part) / len(part) / 2  # what DDP's average makes of it
    assert total == pytest.approx(sum(losses.values()) / len(batch))
    assert rank_slice([5], 1, 2) == ([5], 0.0)  # a rank without an example still joins the sync, weight 0


def keyword_shard(folder, examples, shard, resume=False):
    from test_attack_runner import keyword_attack

    cfg = AttackConfig(model="keyword", recipe="textfooler", n=len(examples))
    attack = keyword_attack()
    with runs.open_run(folder, cfg, {"attack": config_hash(attack.config())}, resume=resume, shard=shard) as run:
        if run.finished:
            return run
        run_attack(attack, examples, run, progress=False)
    return run


def test_attack_shards_resume_alone_and_merge_into_the_single_process_records(tmp_path):
    examples = GOOD + [Example("good good fine film .", 1, id="g4"), Example("a nice , great day", 1, id="g5")]
    keyword_shard(tmp_path / "one", examples, None)
    sharded = tmp_path / "sharded"
    keyword_shard(sharded, examples, (0, 3))
    keyword_shard(sharded, examples, (2, 3))
    assert merge_attack(sharded) is None and not (sharded / "examples.jsonl").exists()
    with pytest.raises(ConfigError, match="1/3"):
        merge_attack(sharded, strict=True)
    # shard 1 crashes after its first example: its JSONL has one line and no metrics
    crashed = keyword_shard(tmp_path / "crash-ref", examples, (1, 3))
    first = crashed.file("examples.jsonl").read_text().splitlines()[0]
    (sharded / "examples.shard-1-of-3.jsonl").write_text(first + "\n")
    with pytest.raises(ConfigError, match="--resume"):
        keyword_shard(sharded, examples, (1, 3))
    keyword_shard(sharded, examples, (1, 3), resume=True)
    merged = merge_attack(sharded)  # the last shard's run merges by itself in robustft.attack; here by hand
    assert lines(sharded / "examples.jsonl") == lines(tmp_path / "one" / "examples.jsonl")
    single = json.loads((tmp_path / "one" / "metrics.json").read_text())
    assert without_timing(merged) == without_timing(single)
    assert (sharded / "examples.csv").exists()
    config = json.loads((sharded / "config.json").read_text())
    assert config["shards"]["n"] == 3 and config["config"]["shard"] is None
    assert keyword_shard(sharded, examples, (0, 3)).finished  # a merged run is reused


def test_eval_shards_give_the_single_process_records_byte_for_byte(tiny_model_dir, tmp_path, capsys):
    base = dict(model=tiny_model_dir, task="sst2", split="dev", n=90, batch_size=16, progress=False, precision="fp32")
    single = evaluate(EvalConfig(**base, output_dir=str(tmp_path / "one")))
    out = tmp_path / "sharded"
    partial = evaluate(EvalConfig(**base, output_dir=str(out), shard="1/2"))
    assert partial["shard"] == "1/2" and not (out / "metrics.json").exists()
    assert main(["merge", str(out)]) == 2 and "0/2" in capsys.readouterr().err
    merged = evaluate(EvalConfig(**base, output_dir=str(out), shard="0/2"))
    assert (out / "examples.jsonl").read_bytes() == (tmp_path / "one" / "examples.jsonl").read_bytes()
    assert merged.metrics == json.loads((out / "metrics.json").read_text())
    assert merged.metrics == single.metrics and merged.accuracy == single.accuracy
    assert main(["merge", str(out)]) == 0  # merging again is harmless


def test_tensorboard_tracker_logs_train_and_dev_scalars(tiny_model_dir, tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    cfg = tiny_train_config(
        tiny_model_dir, tmp_path / "run", n_train=32, max_length=24, log_every=1, tracker="tensorboard"
    )
    run = loop.train(cfg, progress=False)
    events = EventAccumulator(str(next((run / "trackers").iterdir()))).Reload()
    tags = set(events.Tags()["scalars"])
    assert {"train/loss", "train/lr", "train/grad_norm", "dev/accuracy", "dev/loss"} <= tags
    assert [e.step for e in events.Scalars("train/loss")] == [1, 2, 3, 4]
    assert config_hash(cfg) == config_hash(TrainConfig(**{**cfg.__dict__, "tracker": None}))  # not a setting
    with pytest.raises(ConfigError, match="unknown"):
        loop.train(TrainConfig(**{**cfg.__dict__, "tracker": "no-such", "output_dir": str(tmp_path / "x")}))


# ---- 2 processes ----------------------------------------------------------------------------------------------

TRAIN = [
    "--task",
    "sst2",
    "--n_train",
    "64",
    "--n_dev",
    "40",
    "--max_length",
    "32",
    "--epochs",
    "2",
    "--batch_size",
    "8",
    "--grad_accum",
    "2",
    "--eval_batch_size",
    "16",
    "--lr",
    "1e-3",
    "--checkpoint_every",
    "2",
    "--precision",
    "fp32",
    "--progress",
    "false",
    "--threads",
    "1",
]


def train_args(model_dir, out, *extra):
    return ["train", "--model", model_dir, *TRAIN, "--output_dir", str(out), *extra]


@pytest.mark.slow
def test_torchrun_training_matches_one_process_with_the_same_global_batch(tiny_model_dir, tmp_path):
    assert main(train_args(tiny_model_dir, tmp_path / "one")) == 0
    launch(train_args(tiny_model_dir, tmp_path / "two", "--tracker", "tensorboard"))
    one = json.loads((tmp_path / "one" / "metrics.json").read_text())
    two = json.loads((tmp_path / "two" / "metrics.json").read_text())
    assert two["processes"] == 2 and two["steps"] == one["steps"] == 8
    for a, b in zip(one["history"], two["history"], strict=True):
        assert a["dev_accuracy"] == b["dev_accuracy"] and a["dev_loss"] == pytest.approx(b["dev_loss"], abs=1e-5)
    wa, wb = (load_file(tmp_path / r / "best" / "model.safetensors") for r in ("one", "two"))
    assert all(torch.allclose(wa[k], wb[k], atol=1e-5) for k in wa)
    log = (tmp_path / "two" / "train.log").read_text()
    assert log.count("epoch 1 dev accuracy") == 1  # one writer, of the log and of the tracker
    assert len(list((tmp_path / "two" / "trackers" / "two").glob("events.out.tfevents.*"))) == 1


@pytest.mark.slow
def test_a_killed_rank_resumes_exactly_under_either_launcher(tmp_path):
    from robustft.models.factory import tiny_bert

    model, tok = tiny_bert(
        seed=0,
        hidden_dropout_prob=0.1,
        id2label={0: "negative", 1: "positive"},
        label2id={"negative": 0, "positive": 1},
    )
    model.save_pretrained(tmp_path / "m")
    tok.save_pretrained(tmp_path / "m")
    launch(train_args(str(tmp_path / "m"), tmp_path / "full"))
    # rank 1 dies at its 13th loss: epoch 2, after the step-6 checkpoint (2 losses per step)
    died = launch(train_args(str(tmp_path / "m"), tmp_path / "killed"), env={"SCALE_DIE": "1:13"}, check=False)
    assert died.returncode != 0 and not (tmp_path / "killed" / "metrics.json").exists()
    from robustft.training.checkpoint import complete_checkpoints

    newest = complete_checkpoints(tmp_path / "killed" / "checkpoint")[0]
    state = json.loads((newest / "state.json").read_text())
    # step 6's save may have been cut off when torchrun stopped rank 0: then step 4's is the newest complete one
    assert state["loop"]["step"] in (4, 6) and "1" in state["rank_rng"]
    launch(train_args(str(tmp_path / "m"), tmp_path / "killed", "--resume"), launcher="accelerate")
    full = json.loads((tmp_path / "full" / "metrics.json").read_text())
    resumed = json.loads((tmp_path / "killed" / "metrics.json").read_text())
    assert full["history"] == resumed["history"] and full["steps"] == resumed["steps"]
    wa, wb = (load_file(tmp_path / r / "best" / "model.safetensors") for r in ("full", "killed"))
    assert all(torch.equal(wa[k], wb[k]) for k in wa)


@pytest.mark.slow
@pytest.mark.parametrize("method", ["rift", "freelb"])
def test_every_rank_keeps_the_same_weights_for_objectives_that_forward_several_times(tiny_model_dir, tmp_path, method):
    """RIFT (a hull search, two forwards, its own heads outside DDP) and FreeLB (several forwards in one loss)."""
    sync = tmp_path / "sync.json"
    launch(
        [
            "train",
            "--model",
            tiny_model_dir,
            "--task",
            "sst2",
            "--n_train",
            "24",
            "--n_dev",
            "8",
            "--max_length",
            "24",
            "--epochs",
            "1",
            "--batch_size",
            "8",
            "--checkpoint_every",
            "1",
            "--precision",
            "fp32",
            "--progress",
            "false",
            "--method",
            method,
            "--output_dir",
            str(tmp_path / "run"),
        ],
        env={"SCALE_CHECK_SYNC": str(sync)},
    )
    seen = json.loads(sync.read_text())
    assert len(seen) >= 3 and all(len(set(s["digests"])) == 1 for s in seen)
    assert len({s["digests"][0] for s in seen}) == len(seen)  # and the weights did move at every step


@pytest.mark.slow
def test_torchrun_attack_shards_give_the_single_process_records(tiny_model_dir, tmp_path):
    args = [
        "attack",
        "--model",
        tiny_model_dir,
        "--task",
        "sst2",
        "--split",
        "dev",
        "--recipe",
        "pwws",
        "-n",
        "5",
        "--query_budget",
        "25",
        "--progress",
        "false",
        "--threads",
        "1",
        "--precision",
        "fp32",
    ]
    assert main([*args, "--output_dir", str(tmp_path / "one")]) == 0
    done = launch([*args, "--output_dir", str(tmp_path / "two")])
    assert "Attack success rate" in done.stdout
    assert lines(tmp_path / "two" / "examples.jsonl") == lines(tmp_path / "one" / "examples.jsonl")
    one, two = (json.loads((tmp_path / r / "metrics.json").read_text()) for r in ("one", "two"))
    assert without_timing(one) == without_timing(two)
    assert len(lines(tmp_path / "two" / "examples.shard-1-of-2.jsonl")) == 2


@pytest.mark.slow
def test_torchrun_bench_gives_each_rank_whole_cells_and_the_single_process_records(tiny_model_dir, tmp_path):
    from robustft.bench.run import bench
    from test_bench import tiny_bench

    extra = {
        "evals": [{"task": "{task}", "split": "dev", "n": 16}],
        "attacks": [{"recipe": "pwws", "split": "dev", "n": 2, "query_budget": 20}],
    }
    bench(tiny_bench(tiny_model_dir, tmp_path / "one", **extra))
    spec = tmp_path / "tiny.json"
    values = {
        k: v
        for k, v in tiny_bench(tiny_model_dir, tmp_path / "two", **extra).__dict__.items()
        if k not in ("explicit_keys",)
    }
    spec.write_text(json.dumps(values))
    launch(["bench", str(spec)])
    metrics = json.loads((tmp_path / "two" / "metrics.json").read_text())
    assert metrics["complete"] and all(v == "done" for v in metrics["jobs"].values())
    for name in ("bert-sst2-n32-s0", "im-sst2-n32-s0"):
        for job in ("eval-sst2-dev-n16", "attack-pwws-sst2-dev-n2-s0"):
            a, b = (tmp_path / r / "cells" / name / job / "examples.jsonl" for r in ("one", "two"))
            assert lines(a) == lines(b), job
    logs = [(tmp_path / "two" / "cells" / n / "train.log").read_text() for n in ("bert-sst2-n32-s0", "im-sst2-n32-s0")]
    assert all("1 process(es)" in log for log in logs)  # each cell trained whole, by one rank
    writers = {(tmp_path / "two" / "cells" / n / ".lock").read_text() for n in ("bert-sst2-n32-s0", "im-sst2-n32-s0")}
    assert len(writers) == 2  # by two different processes (the lock holds the writer's pid)
    assert (tmp_path / "two" / "report" / "report.html").exists()


def test_auto_precision_on_the_cpu_is_bf16_only_where_the_cpu_has_it(monkeypatch):
    from robustft import runtime

    cpu = torch.device("cpu")
    monkeypatch.setattr(runtime, "cpu_has_native_bf16", lambda: True)
    assert runtime.resolve_precision("auto", cpu) == "bf16"
    monkeypatch.setattr(runtime, "cpu_has_native_bf16", lambda: False)  # emulated bf16 trains 8-12x slower
    assert runtime.resolve_precision("auto", cpu) == "fp32"
    assert runtime.resolve_precision("bf16", cpu) == "bf16"  # an explicit choice stands
