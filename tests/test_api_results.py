"""Issue 67's API items: train, evaluate and attack return one result object (the run folder, metrics.json, the
headline accuracy as a fraction), `ReportConfig` is exported, the command line prints the result it was handed
(never a metrics.json re-read after the lock is gone), and validating a config changes nothing in it. Each test
failed on the code before (train returned a path, evaluate and attack a dict; the CLI re-read metrics.json;
validation pinned `im.grad` and rewrote `task`)."""

import copy
import json

import pytest

import robustft
from robustft.cli import main
from robustft.config import AttackConfig, EvalConfig, TrainConfig
from robustft.runs import RunResult
from train_helpers import tiny_train_config


@pytest.fixture(scope="module")
def trained(tiny_model_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("api") / "run"
    return robustft.train(tiny_train_config(tiny_model_dir, out, max_length=16)), out


def lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_train_returns_its_folder_and_the_metrics_it_wrote(trained):
    result, out = trained
    assert isinstance(result, RunResult) and result.path == out and result.verb == "train"
    written = json.loads((out / "metrics.json").read_text())
    assert result.metrics == written
    history = written["history"]  # the best epoch: the highest dev accuracy of the history
    assert result.accuracy == max(h["dev_accuracy"] for h in history) and 0.0 <= result.accuracy <= 1.0
    assert result.n == 16
    assert str(result) == str(out) and (result / "best").is_dir()  # a train result still reads as its folder


def test_evaluate_returns_its_folder_and_a_fraction_recounted_from_its_records(trained, tmp_path):
    result = robustft.evaluate(EvalConfig(model=str(trained[1]), n=12, progress=False, output_dir=str(tmp_path / "e")))
    assert result.path == tmp_path / "e" and result.verb == "eval"
    records = lines(tmp_path / "e" / "examples.jsonl")
    right = sum(r["prediction"] == r["label"] for r in records)
    assert (result.n, result.accuracy) == (12, right / 12)
    low, high = result.ci95
    assert 0.0 <= low <= result.accuracy <= high <= 1.0
    assert result["accuracy"] == result.accuracy  # evaluate's callers read the metrics by key, as before


def test_attack_returns_the_accuracy_under_attack_as_a_fraction_like_evaluate(trained, tmp_path):
    cfg = AttackConfig(model=str(trained[1]), recipe="deepwordbug", n=6, split="dev", output_dir=str(tmp_path))
    result = robustft.attack(cfg)
    records = lines(tmp_path / "examples.jsonl")
    counted = [r for r in records if r["result"] != "error"]
    failed = sum(r["result"] == "failed" for r in counted)  # still right after the attack
    assert (result.n, result.accuracy) == (len(counted), failed / len(counted))
    assert result.path == tmp_path and result["accuracy_under_attack"] == pytest.approx(100 * result.accuracy)


def test_report_config_is_exported():
    assert robustft.ReportConfig is robustft.config.ReportConfig and "ReportConfig" in robustft.__all__


def test_the_command_line_prints_the_run_it_was_handed_not_a_rewritten_metrics_file(
    tiny_model_dir, tmp_path, capsys, monkeypatch
):
    """Another process may rewrite metrics.json once train released the lock; the summary is the returned one."""
    from robustft.training import loop

    real = loop.train

    def then_rewritten(cfg, **kwargs):
        result = real(cfg, **kwargs)
        other = {**result.metrics, "best": {**result.metrics["best"], "dev_accuracy": 0.123456}}
        (result.path / "metrics.json").write_text(json.dumps(other))
        return result

    monkeypatch.setattr(loop, "train", then_rewritten)
    argv = ["train", "--model", tiny_model_dir, "--n_train", "8", "--n_dev", "8", "--epochs", "1", "--max_length", "8"]
    assert main([*argv, "--progress", "false", "--output_dir", str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    assert "0.1235" not in out
    assert "best dev accuracy" in out


def test_validate_changes_nothing_in_the_config(tmp_path):
    data = tmp_path / "reviews.csv"
    data.write_text("text,label\n" + "".join(f"row {i},{'pos' if i % 2 else 'neg'}\n" for i in range(10)))
    for cfg in (
        TrainConfig(arch="im", im={"K": 3}),
        TrainConfig(data=str(data)),
        EvalConfig(model="m", data=str(data)),
    ):
        before = copy.deepcopy(vars(cfg))
        cfg.validate()
        assert vars(cfg) == before
