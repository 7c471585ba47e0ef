"""What a finished training run leaves on disk: its best model, not its checkpoints (optimizer state and older
copies), unless asked; a finished run without them is still reused, never trained again."""

import json

from robustft.training import loop
from robustft.training.checkpoint import discard_checkpoints
from train_helpers import tiny_train_config


def config(model_dir, out, **kw):
    settings = dict(n_train=48, max_length=16, epochs=2, batch_size=16, checkpoint_every=1)
    return tiny_train_config(model_dir, out, **{**settings, **kw})


def files_under(folder):
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def test_a_finished_run_keeps_its_best_model_and_no_optimizer_state(tiny_model_dir, tmp_path):
    run = loop.train(config(tiny_model_dir, tmp_path / "run"), progress=False).path
    assert (run / "best" / "model.safetensors").is_file()
    assert not (run / "checkpoint").exists() and not (run / "checkpoint.old").exists()
    assert not [f for f in files_under(run) if "optimizer" in f]
    assert "removed the checkpoints" in (run / "train.log").read_text()

    written = (run / "best" / "model.safetensors").stat().st_mtime_ns
    again = loop.train(config(tiny_model_dir, tmp_path / "run"), resume=True, progress=False)
    assert again.path == run and (run / "best" / "model.safetensors").stat().st_mtime_ns == written  # reused
    assert json.loads((run / "metrics.json").read_text())["epochs_run"] == 2


def test_keep_checkpoints_keeps_them_and_is_not_part_of_the_run_hash(tiny_model_dir, tmp_path):
    from robustft.config import config_hash

    cfg = config(tiny_model_dir, tmp_path / "run", keep_checkpoints=True, checkpoint_keep=2)
    run = loop.train(cfg, progress=False)
    kept = sorted(p.name for p in (run / "checkpoint").iterdir())
    assert len(kept) == 2 and all((run / "checkpoint" / k / "optimizer.safetensors").is_file() for k in kept)
    assert config_hash(cfg) == config_hash(config(tiny_model_dir, tmp_path / "run"))


def test_an_interrupted_removal_is_finished_by_the_next(tmp_path):
    folder = tmp_path / "checkpoint"
    (folder / "000001-step1").mkdir(parents=True)
    (folder / "000001-step1" / "optimizer.safetensors").write_bytes(b"x" * 1000)
    (tmp_path / "checkpoint.old" / "000000-step0").mkdir(parents=True)  # a kill left it mid-removal
    assert discard_checkpoints(folder) == 1000
    assert not folder.exists() and not (tmp_path / "checkpoint.old").exists()
    assert discard_checkpoints(folder) == 0  # nothing left: nothing to do
