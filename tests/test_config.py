import pytest

from robustft.cli import split_overrides
from robustft.config import TrainConfig, build_config, config_hash
from robustft.errors import ConfigError


def test_file_then_overrides_with_groups_and_types(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("task: snli\nepochs: 5\nim: {K: 2}\n")
    cfg = build_config(
        TrainConfig,
        [str(path)],
        split_overrides(["--epochs", "2", "--lr=1e-4", "--im.eta", "0.5", "--precision=fp32", "--n_train", "100"]),
    )
    assert (cfg.task, cfg.epochs, cfg.lr, cfg.precision, cfg.n_train) == ("snli", 2, 1e-4, "fp32", 100)
    assert cfg.im == {"K": 2, "eta": 0.5}


@pytest.mark.parametrize(
    "override,message",
    [
        (["--epoch", "3"], "unknown config key 'epoch'"),
        (["--epochs", "three"], "'epochs' expects"),
        (["--epochs", "0"], "epochs: must be at least 1, got 0"),
        (["--lr", "inf"], "lr: must be a finite number"),
        (["--max_grad_norm", "nan"], "max_grad_norm: must be a finite number"),
        (["--precision", "fp8"], "precision: expected one of"),
        (["--dev_split", "test"], "dev_split: model selection on a test split"),
        (["--task", "advglue-sst2"], "is an evaluation set"),
        (["--task.x", "1"], "'task' is not a group"),
        (["stray"], "unexpected argument"),
    ],
)
def test_bad_settings_are_named(override, message):
    with pytest.raises(ConfigError, match=message):
        build_config(TrainConfig, [], split_overrides(override))


def test_hash_ignores_where_output_goes_but_not_what_is_computed():
    a, b = TrainConfig(), TrainConfig(output_dir="elsewhere", checkpoint_every=7)
    assert config_hash(a) == config_hash(b)
    assert config_hash(a) != config_hash(TrainConfig(seed=1))
    assert config_hash(TrainConfig(im={"K": 1})) != config_hash(TrainConfig(im={"K": 2}))


def test_invalid_values_rejected():
    with pytest.raises(ConfigError, match="batch_size"):
        TrainConfig(batch_size=0).validate()
    with pytest.raises(ConfigError, match="arch"):
        TrainConfig(arch="resnet").validate()


def test_old_flags_still_read_their_bool_and_string_values():
    with pytest.warns(FutureWarning):
        cfg = build_config(TrainConfig, [], split_overrides(["--quiet", "--out", "yes", "--no_bf16"]))
    assert (cfg.progress, cfg.output_dir, cfg.precision) == (False, "yes", "fp32")


def test_a_misspelled_key_names_the_closest_one():
    with pytest.raises(ConfigError, match="unknown config key 'lerning_rate'; known keys") as err:
        build_config(TrainConfig, [], ["lerning_rate=1"])
    assert "did you mean" not in str(err.value)
    with pytest.raises(ConfigError, match="unknown config key 'max_lenght'; did you mean 'max_length'"):
        build_config(TrainConfig, [], ["max_lenght=64"])


def test_config_files_keep_yaml_types_and_are_range_checked(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("seed: 4294967296\n")
    with pytest.raises(ConfigError, match="seed: must be at most 4294967295"):
        build_config(TrainConfig, [str(path)])
    path.write_text("label: yes\n")  # YAML 1.1 reads a bare yes as true: a file must quote it
    with pytest.raises(ConfigError, match="'label' expects"):
        build_config(TrainConfig, [str(path)])
