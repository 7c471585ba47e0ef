"""The training loop on a tiny random BERT: it learns, it resumes exactly, its run folder is complete."""

import json
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file

from robustft.training import loop
from robustft.training.objectives.standard import Standard
from train_helpers import tiny_train_config


@pytest.fixture(scope="module")
def dropout_model_dir(tmp_path_factory):
    """Dropout on, so the resume test also checks that the RNG state is restored."""
    from robustft.models.factory import tiny_bert

    model, tok = tiny_bert(
        seed=0,
        hidden_dropout_prob=0.1,
        id2label={0: "negative", 1: "positive"},
        label2id={"negative": 0, "positive": 1},
    )
    folder = tmp_path_factory.mktemp("tiny_dropout")
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return str(folder)


def small_config(model_dir, out, **kw):
    settings = dict(n_train=96, n_dev=64, max_length=32, epochs=2, batch_size=16, lr=1e-3, checkpoint_every=2)
    return tiny_train_config(model_dir, out, **{**settings, **kw})


def test_run_folder_holds_config_metrics_log_and_best_model(tiny_model_dir, tmp_path):
    run = loop.train(small_config(tiny_model_dir, tmp_path / "run"), progress=False)
    described = json.loads((run / "config.json").read_text())
    assert len(described["hash"]) == 64 and described["versions"]["torch"]
    assert described["machine"]["cores"] >= 1 and described["machine"]["cpu"]  # runs from other machines told apart
    assert described["verb"] == "train" and described["config"]["task"] == "sst2"
    data = {k for k in described["inputs"] if k.startswith("data/")}
    assert data == {"data/sst2/train.tsv", "data/sst2/dev.tsv"}  # each with its sha256
    assert all(len(described["inputs"][k]) == 64 for k in data)
    metrics = json.loads((run / "metrics.json").read_text())
    assert [h["epoch"] for h in metrics["history"]] == [1, 2]
    assert metrics["best"]["dev_accuracy"] == max(h["dev_accuracy"] for h in metrics["history"])
    log = (run / "train.log").read_text()
    assert "epoch 1 dev accuracy" in log and "epoch 2 dev accuracy" in log
    assert (run / "best" / "model.safetensors").exists()


def test_existing_run_folder_is_reused_or_refused_never_overwritten_silently(tiny_model_dir, tmp_path):
    from robustft.errors import ConfigError

    cfg = small_config(tiny_model_dir, tmp_path / "run", epochs=1)
    loop.train(cfg, progress=False)
    written = (tmp_path / "run" / "best" / "model.safetensors").stat().st_mtime_ns
    assert loop.train(small_config(tiny_model_dir, tmp_path / "run", epochs=1), progress=False).path == tmp_path / "run"
    assert (tmp_path / "run" / "best" / "model.safetensors").stat().st_mtime_ns == written  # reused, not retrained
    with pytest.raises(ConfigError, match="--resume"):
        loop.train(small_config(tiny_model_dir, tmp_path / "run", epochs=1, seed=5), progress=False)
    with pytest.raises(ConfigError, match="settings changed: seed"):
        loop.train(small_config(tiny_model_dir, tmp_path / "run", epochs=1, seed=5), resume=True, progress=False)


def test_killed_run_resumes_to_the_same_result(dropout_model_dir, tmp_path, monkeypatch):
    reference = loop.train(small_config(dropout_model_dir, tmp_path / "full"), progress=False)

    calls = {"n": 0}
    real_loss = Standard.loss

    def dying_loss(self, model, batch):
        calls["n"] += 1
        if calls["n"] == 10:  # mid-epoch 2, two batches after the step-8 checkpoint
            raise KeyboardInterrupt
        return real_loss(self, model, batch)

    cfg = small_config(dropout_model_dir, tmp_path / "killed")
    monkeypatch.setattr(Standard, "loss", dying_loss)
    with pytest.raises(KeyboardInterrupt):
        loop.train(cfg, progress=False)
    monkeypatch.setattr(Standard, "loss", real_loss)
    resumed = loop.train(cfg, resume=True, progress=False)

    a = json.loads((reference / "metrics.json").read_text())
    b = json.loads((resumed / "metrics.json").read_text())
    assert a["history"] == b["history"] and a["steps"] == b["steps"]
    wa, wb = load_file(reference / "best" / "model.safetensors"), load_file(resumed / "best" / "model.safetensors")
    assert all(torch.equal(wa[k], wb[k]) for k in wa)


def test_resume_on_a_machine_where_auto_means_another_precision_goes_on_in_the_run_s_own(
    tiny_model_dir, tmp_path, monkeypatch, caplog
):
    """'auto' is bf16 on a CPU with native bf16 and fp32 elsewhere; a run started on the one and resumed on the other
    must not finish in a precision it did not start in."""
    from robustft import runtime

    calls = {"n": 0}
    real_loss = Standard.loss

    def dying_loss(self, model, batch):
        calls["n"] += 1
        if calls["n"] == 10:
            raise KeyboardInterrupt
        return real_loss(self, model, batch)

    cfg = small_config(tiny_model_dir, tmp_path / "moved", precision="auto")
    monkeypatch.setattr(runtime, "cpu_has_native_bf16", lambda: True)
    monkeypatch.setattr(Standard, "loss", dying_loss)
    with pytest.raises(KeyboardInterrupt):
        loop.train(cfg, progress=False)
    monkeypatch.setattr(Standard, "loss", real_loss)
    monkeypatch.setattr(runtime, "cpu_has_native_bf16", lambda: False)
    with caplog.at_level("WARNING", logger="robustft"):
        resumed = loop.train(cfg, resume=True, progress=False)

    assert json.loads((resumed / "metrics.json").read_text())["precision"] == "bf16"
    assert "trained in bf16 so far; 'auto' means fp32 on this machine" in caplog.text


def test_patience_stops_when_dev_accuracy_stops_improving_and_older_runs_keep_their_hash(tiny_model_dir, tmp_path):
    from robustft.config import config_hash, hashed_settings

    cfg = small_config(tiny_model_dir, tmp_path / "patient", epochs=5, lr=0.0, patience=1)
    metrics = json.loads((loop.train(cfg, progress=False) / "metrics.json").read_text())
    # lr 0: dev accuracy never improves after epoch 1, so one more epoch runs and then the loop stops
    assert [h["epoch"] for h in metrics["history"]] == [1, 2] and metrics["epochs_run"] == 2
    assert metrics["best"]["epoch"] == 1 and metrics["complete"]
    old = small_config(tiny_model_dir, tmp_path / "old")  # patience None: hashed as before the key existed
    assert "patience" not in hashed_settings(old) and "patience" in hashed_settings(cfg)
    assert config_hash(old) != config_hash(small_config(tiny_model_dir, tmp_path / "old", patience=3))


def test_max_grad_norm_zero_turns_clipping_off_instead_of_zeroing_the_gradients(tiny_model_dir, tmp_path):
    trained = {
        n: load_file(
            loop.train(small_config(tiny_model_dir, tmp_path / str(n), epochs=1, max_grad_norm=n), progress=False)
            / "best"
            / "model.safetensors"
        )
        for n in (0.0, 1e9)
    }
    start = load_file(f"{tiny_model_dir}/model.safetensors")
    assert all(torch.equal(trained[0.0][k], trained[1e9][k]) for k in start)  # off = a bound never reached
    assert not all(torch.equal(trained[0.0][k], start[k]) for k in start)  # and it trained


def test_tiny_model_learns_a_separable_task(tiny_model_dir, tmp_path):
    run = loop.train(
        small_config(
            tiny_model_dir,
            tmp_path / "fit",
            n_train=None,
            train_split="kshot13-train",
            dev_split="kshot13-train",
            n_dev=None,
            epochs=15,
            batch_size=8,
            lr=3e-3,
        ),
        progress=False,
    )
    assert json.loads((run / "metrics.json").read_text())["best"]["dev_accuracy"] >= 0.9


@pytest.mark.slow  # a robustft process
def test_user_errors_print_one_line_without_traceback(tmp_path):
    (tmp_path / "sst2").mkdir()
    (tmp_path / "sst2" / "train.tsv").write_text("label\tsentence\n1\tgood\nx\tbad label\n")
    (tmp_path / "sst2" / "dev.tsv").write_text("label\tcontent\n1\tgood\n")
    env = {"ROBUSTFT_DATA": str(tmp_path), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PATH": ""}
    done = subprocess.run(
        [sys.executable, "-m", "robustft.cli", "train", "--output_dir", str(tmp_path / "r")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].endswith("train.tsv:3: unknown label 'x'; expected one of ['0', '1', 'negative', 'positive']")


def test_objective_hooks_epoch_start_and_per_module_weight_decay(tiny_model_dir, tmp_path, monkeypatch):
    from robustft.training.objectives import OBJECTIVES

    seen, built = [], {}

    class Hooked(Standard):
        name = "test-hooks"
        module_weight_decay = {"head": 0.5}

        def setup(self, model, ctx):
            self.head = torch.nn.Linear(2, 2)

        def modules(self):
            return {"head": self.head}

        def on_epoch_start(self, epoch):
            seen.append(epoch)

    real_build = loop.build_optimizer

    def spy(*args, **kwargs):
        built["optimizer"], scheduler = real_build(*args, **kwargs)
        return built["optimizer"], scheduler

    monkeypatch.setattr(loop, "build_optimizer", spy)
    monkeypatch.setitem(OBJECTIVES, "test-hooks", Hooked)
    loop.train(small_config(tiny_model_dir, tmp_path / "hooks", method="test-hooks", grad_accum=2), progress=False)
    assert seen == [0, 1]
    rates = {id(p): g["weight_decay"] for g in built["optimizer"].param_groups for p in g["params"]}
    objective_params = [p for g in built["optimizer"].param_groups for p in g["params"] if p.shape == (2, 2)]
    assert [rates[id(p)] for p in objective_params] == [0.5]  # the head's weight; its bias gets no decay


def test_a_training_resolves_its_method_once(tiny_model_dir, tmp_path, monkeypatch):
    """The objective is built once (it was also built and thrown away to check the name) and its preset read once;
    config.json records the deviations of that one resolution."""
    from robustft.training.objectives import OBJECTIVES

    calls = {"built": 0, "preset": 0}

    class Counted(Standard):
        name = "test-counted"

        def __init__(self):
            calls["built"] += 1
            super().__init__()

        @classmethod
        def preset(cls, task):
            calls["preset"] += 1
            return {"weight_decay": 0.5}

        @classmethod
        def deviations(cls, cfg):
            return [f"weight decay {cfg.weight_decay}"]

    monkeypatch.setitem(OBJECTIVES, "test-counted", Counted)
    cfg = small_config(tiny_model_dir, tmp_path / "run", method="test-counted", epochs=1, n_train=16, n_dev=16)
    run = loop.train(cfg, progress=False)
    assert calls == {"built": 1, "preset": 1}
    described = json.loads((run.path / "config.json").read_text())
    assert described["deviations"] == ["weight decay 0.5"]  # read after the preset filled the key
    assert described["preset"] == {"method": "test-counted", "applied": {"weight_decay": 0.5}}
