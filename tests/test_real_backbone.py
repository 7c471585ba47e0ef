"""One short real fine-tune: MiniLM (the offline PyPI backbone) on real SST-2 data, scored by `robustft eval`."""

import json

import pytest

from robustft.config import EvalConfig, TrainConfig
from robustft.evaluation.run import evaluate
from robustft.training.loop import train


@pytest.mark.slow
def test_minilm_learns_sst2_and_round_trips_through_eval(tmp_path):
    cfg = TrainConfig(
        n_train=480, n_dev=200, epochs=3, batch_size=16, max_length=64, checkpoint_every=0, output_dir=str(tmp_path)
    )
    run = train(cfg, progress=False)
    best = json.loads((run / "metrics.json").read_text())["best"]
    assert best["dev_accuracy"] >= 0.7  # chance is 0.5; ~0.8 with 1,000 examples and 3 epochs
    again = evaluate(EvalConfig(model=str(run), task="sst2", split="dev", n=200, progress=False))
    assert again["max_length"] == 64  # inherited from the training run
    assert again["accuracy"] == pytest.approx(best["dev_accuracy"], abs=1e-6)
