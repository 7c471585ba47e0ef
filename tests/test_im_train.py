"""`robustft train --arch im|ex` end to end on a tiny model: the run's best model carries its IM settings."""

import json

import pytest

from robustft.models.factory import load_classifier, tiny_bert
from robustft.models.im import im_stats, settings_of
from robustft.training.loop import train
from train_helpers import tiny_train_config


@pytest.mark.parametrize("arch", ["im", "ex"])
def test_train_with_im_arch_saves_a_model_that_reloads_converted(tmp_path, arch):
    model, tok = tiny_bert(seed=0)
    model.save_pretrained(tmp_path / "tiny")
    tok.save_pretrained(tmp_path / "tiny")
    im = {"layers": "2", "K": 1, "eta": 0.05, "form": "layer", "dt": 0.5}
    cfg = tiny_train_config(tmp_path / "tiny", tmp_path / "run", precision="bf16", arch=arch, im=im)
    run_dir = train(cfg, progress=False)
    saved = json.loads((run_dir / "best" / "config.json").read_text())["im"]
    assert saved["arch"] == arch and saved["layers"] == [2] and saved["form"] == "layer"
    loaded, _ = load_classifier(str(run_dir / "best"))
    assert settings_of(loaded).arch == arch and list(im_stats(loaded)) == ["layer 2"]
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert list(metrics["im_solver"]) == ["layer 2"]
    assert (metrics["im_solver"]["layer 2"]["forwards"] > 0) == (arch == "im")  # EX never runs the solver
