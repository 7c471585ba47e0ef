"""The run layer under every verb: one config loader, one run-folder protocol, inheritance from the trained run,
CLI = Python API, and the guards that keep data safe (no foreign folder deleted, no cross-verb writes, resume that
knows its data, one process per folder)."""

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

import robustft
from robustft import resources, runs
from robustft.cli import main
from robustft.config import AttackConfig, EvalConfig, TrainConfig
from robustft.data.digests import model_digests
from robustft.errors import ConfigError
from robustft.models.factory import model_reference
from train_helpers import tiny_train_config


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory, tiny_model_dir):
    out = tmp_path_factory.mktemp("runs") / "train64"
    cfg = tiny_train_config(tiny_model_dir, out, n_train=32, n_dev=32, max_length=64, batch_size=16, threads=1)
    return robustft.train(cfg).path


def attack_cfg(model, out, **kw):
    return AttackConfig(
        **{
            "model": str(model),
            "split": "dev",
            "recipe": "pwws",
            "n": 3,
            "output_dir": str(out),
            "progress": False,
            "threads": 1,
            **kw,
        }
    )


def described(folder) -> dict:
    return json.loads((Path(folder) / "config.json").read_text())


def without_timing(folder) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "seconds"} for r in runs.load_records(Path(folder) / "examples.jsonl")]


def test_attack_inherits_max_length_and_precision_from_the_training_run(trained_run, tmp_path):
    robustft.attack(attack_cfg(trained_run, tmp_path / "a"))
    config = described(tmp_path / "a")
    assert config["config"]["max_length"] == 64 and config["config"]["precision"] == "fp32"
    assert config["inherited"]["max_length"] == {"value": 64, "from": "training run"}
    assert config["model_run"]["path"] == str(trained_run)
    robustft.attack(attack_cfg(trained_run, tmp_path / "b", max_length=128))
    assert described(tmp_path / "b")["config"]["max_length"] == 128  # the explicit value wins
    assert "max_length" not in described(tmp_path / "b")["inherited"]


def test_cli_and_python_api_write_identical_attack_records(trained_run, tmp_path):
    code = main(
        [
            "attack",
            "--model",
            str(trained_run),
            "--split",
            "dev",
            "--recipe",
            "pwws",
            "-n",
            "3",
            "--output_dir",
            str(tmp_path / "cli"),
            "--progress",
            "false",
            "--threads",
            "1",
        ]
    )
    assert code == 0
    robustft.attack(attack_cfg(trained_run, tmp_path / "api"))
    assert without_timing(tmp_path / "cli") == without_timing(tmp_path / "api")
    assert described(tmp_path / "cli")["hash"] == described(tmp_path / "api")["hash"]


def test_eval_writes_per_example_records_with_an_interval_and_reuses_a_finished_run(trained_run, tmp_path):
    cfg = EvalConfig(
        model=str(trained_run), task="sst2", split="dev", n=20, output_dir=str(tmp_path / "e"), progress=False
    )
    metrics = robustft.evaluate(cfg)
    records = runs.load_records(tmp_path / "e" / "examples.jsonl")
    assert len(records) == metrics["n"] == 20 and metrics["max_length"] == 64
    assert metrics["accuracy"] == sum(r["correct"] for r in records) / 20
    low, high = metrics["accuracy_ci95"]
    assert low <= metrics["accuracy"] <= high and high - low > 0.1  # 20 examples cannot pin an accuracy down
    assert 0.5 <= metrics["majority_accuracy"] <= 1
    written = (tmp_path / "e" / "examples.jsonl").stat().st_mtime_ns
    assert robustft.evaluate(cfg) == metrics  # the finished run is reused, not recomputed
    assert (tmp_path / "e" / "examples.jsonl").stat().st_mtime_ns == written


def test_overwrite_never_deletes_a_folder_robustft_did_not_write(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "keep.txt").write_text("mine")
    assert main(["train", "--output_dir", ".", "--overwrite", "--task", "foo"]) == 2  # validated before anything
    assert main(["train", "--output_dir", ".", "--overwrite", "--n_train", "8"]) == 2
    assert "not a robustft run folder" in capsys.readouterr().err
    assert (tmp_path / "keep.txt").read_text() == "mine"
    fake = {runs.MARK: 1, "verb": "train", "config": {}, "hash": "x"}
    (tmp_path / "config.json").write_text(json.dumps(fake))
    with pytest.raises(ConfigError, match="working directory"):
        runs.delete_run(Path("."), "train")
    assert (tmp_path / "keep.txt").exists()


def test_an_attack_never_writes_into_a_training_run_folder(trained_run, tmp_path):
    before = (trained_run / "config.json").read_text(), (trained_run / "metrics.json").read_text()
    with pytest.raises(ConfigError, match="holds a robustft train run"):
        robustft.attack(attack_cfg(trained_run, trained_run))
    assert ((trained_run / "config.json").read_text(), (trained_run / "metrics.json").read_text()) == before


def test_resume_refuses_changed_data_and_accepts_a_moved_model_with_the_same_files(
    tiny_model_dir, tmp_path, monkeypatch
):
    root = tmp_path / "data"
    shutil.copytree(Path(resources.data_root()) / "sst2", root / "sst2")
    monkeypatch.setenv("ROBUSTFT_DATA", str(root))  # the split cache follows the data root and its files
    cfg = EvalConfig(
        model=tiny_model_dir, task="sst2", split="dev", n=5, output_dir=str(tmp_path / "e"), progress=False
    )
    robustft.evaluate(cfg)
    moved = tmp_path / "moved_model"
    shutil.copytree(tiny_model_dir, moved)
    robustft.evaluate(EvalConfig(**{**cfg.__dict__, "model": str(moved)}), resume=True)  # same files: accepted
    dev = root / "sst2" / "dev.tsv"
    lines = dev.read_text(encoding="utf-8").splitlines(keepends=True)
    dev.write_text("".join(lines[:-1]), encoding="utf-8")  # one example less
    with pytest.raises(ConfigError, match="inputs changed: data/sst2/dev.tsv"):
        robustft.evaluate(cfg, resume=True)


def test_two_processes_never_write_into_one_run_folder(tmp_path):
    cfg = EvalConfig(model="x")
    with runs.open_run(tmp_path / "r", cfg, {}):
        with pytest.raises(ConfigError, match="in use by another robustft process"):
            runs.open_run(tmp_path / "r", cfg, {}, resume=True)
    runs.open_run(tmp_path / "r", cfg, {}, resume=True).close()  # released with the first


@pytest.mark.parametrize(
    "argv,message",
    [
        (["eval", "--batch_size", "-4"], "batch_size: must be at least 1, got -4"),
        (["attack", "--batch_size", "0"], "batch_size: must be at least 1, got 0"),
        (["attack", "--max_length", "-5"], "max_length: must be at least 2, got -5"),
        (["train", "--lr", "inf"], "lr: must be a finite number"),
        (["train", "--max_grad_norm", "nan"], "max_grad_norm: must be a finite number"),
        (["train", "--dev_split", "test"], "model selection on a test split"),
        (["train", "--train_split", "kshot13-train", "--n_train", "1000"], "n_train: asked for 1000 examples"),
        (["eval", "--task", "sst2", "--split", "nope"], "has no split 'nope'"),
    ],
)
def test_bad_values_are_one_line_errors_naming_the_key(tiny_model_dir, tmp_path, capsys, argv, message):
    argv = argv + (["--model", tiny_model_dir] if argv[0] != "train" else ["--model", tiny_model_dir])
    assert main(argv + ["--output_dir", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]
    assert not (tmp_path / "out" / "metrics.json").exists()


def test_old_flag_spellings_still_work_with_a_warning(tiny_model_dir, tmp_path, capsys):
    out = tmp_path / "old"
    code = main(
        [
            "attack",
            "--model",
            tiny_model_dir,
            "--split",
            "dev",
            "--recipe",
            "pwws",
            "-n",
            "1",
            "--out",
            str(out),
            "--no-progress",
            "--max-length",
            "32",
            "--bf16",
            "--set",
            "query_budget=5",
        ]
    )
    assert code == 0
    config = described(out)["config"]
    assert (config["max_length"], config["precision"], config["recipe_args"]) == (32, "bf16", {"query_budget": 5})
    err = capsys.readouterr().err
    assert "'--max-length' is the old spelling" in err and "'--out' is replaced by '--output_dir'" in err


@pytest.mark.parametrize("verb,cls", [("train", TrainConfig), ("eval", EvalConfig), ("attack", AttackConfig)])
def test_help_lists_every_key_with_its_default(verb, cls, capsys):
    with pytest.raises(SystemExit):
        main([verb, "--help"])
    out = capsys.readouterr().out
    assert all(f"--{f.name} " in out for f in dataclasses.fields(cls))
    assert "(default 'auto')" in out or "(default None)" in out


def test_resolve_finds_the_run_of_a_model_folder_and_passes_other_references_through(trained_run):
    assert runs.resolve(trained_run).model == str(trained_run / "best")
    assert runs.resolve(trained_run / "best").train_config["max_length"] == 64
    assert runs.resolve("minilm") == runs.Resolved("minilm")


def test_a_run_folder_and_its_best_model_record_the_same_model_files(trained_run):
    """A training run folder given as a model means its best/ model: naming either records the same inputs."""
    trained_run = Path(trained_run)
    from_run, from_best = model_digests(str(trained_run)), model_digests(str(trained_run / "best"))
    assert from_run == from_best
    assert "model/model.safetensors" in from_run and "model/config.json" in from_run
    assert model_reference(str(trained_run)) == str(trained_run / "best")  # the folder the loader reads


def test_the_run_folders_own_files_are_not_model_inputs(trained_run):
    trained_run = Path(trained_run)
    own = {p.name for p in trained_run.glob("*.json")} - {p.name for p in (trained_run / "best").glob("*.json")}
    assert own  # e.g. metrics.json: the run's record, not part of the model
    assert not {f"model/{name}" for name in own} & set(model_digests(str(trained_run)))
