"""A run records the sha256 of the model files it loads: a training run folder given as a model means its best/
model, so naming the run folder or its best/ folder records the same inputs."""

import pytest

import robustft
from robustft.config import TrainConfig
from robustft.data.digests import model_digests
from robustft.models.factory import model_reference


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory, tiny_model_dir):
    out = tmp_path_factory.mktemp("runs") / "train"
    cfg = TrainConfig(
        model=tiny_model_dir,
        n_train=16,
        n_dev=16,
        max_length=32,
        epochs=1,
        batch_size=16,
        precision="fp32",
        output_dir=str(out),
        progress=False,
        threads=1,
    )
    robustft.train(cfg)
    return out


def test_a_run_folder_and_its_best_model_record_the_same_model_files(trained_run):
    from_run, from_best = model_digests(str(trained_run)), model_digests(str(trained_run / "best"))
    assert from_run == from_best
    assert "model/model.safetensors" in from_run and "model/config.json" in from_run
    assert model_reference(str(trained_run)) == str(trained_run / "best")  # the folder the loader reads


def test_the_run_folders_own_files_are_not_model_inputs(trained_run):
    own = {p.name for p in trained_run.glob("*.json")} - {p.name for p in (trained_run / "best").glob("*.json")}
    assert own  # e.g. metrics.json: the run's record, not part of the model
    assert not {f"model/{name}" for name in own} & set(model_digests(str(trained_run)))
