"""Every method's published recipe, as TrainConfig keys the config builder applies unless the user set them."""

import dataclasses

import pytest

from robustft.config import TrainConfig
from robustft.training.objectives import OBJECTIVES, build_objective


@pytest.mark.parametrize("method", sorted(OBJECTIVES))
@pytest.mark.parametrize("task", ["imdb", "sst2", "ag_news", "snli", "rte"])
def test_every_preset_is_made_of_config_keys_and_builds_its_objective(method, task):
    preset = OBJECTIVES[method].preset(task)
    known = {f.name for f in dataclasses.fields(TrainConfig)}
    assert set(preset) <= known, set(preset) - known
    build_objective(method, preset.get("method_args"))  # every method_arg is a real parameter


@pytest.mark.parametrize("method", ["rift-imdb", "rift"])
def test_rift_imdb_recipe(method):
    preset = OBJECTIVES[method].preset("imdb")
    assert {k: preset[k] for k in ("lr", "batch_size", "max_length", "epochs", "warmup_ratio", "lr_schedule")} == {
        "lr": 2e-5,
        "batch_size": 32,
        "max_length": 300,
        "epochs": 20,
        "warmup_ratio": 0.0,
        "lr_schedule": "constant",
    }
    assert preset["method_args"]["beta"] == 10.0 and preset["method_args"]["alpha"] == 0.1


@pytest.mark.parametrize("method", ["rift-snli", "rift"])
def test_rift_snli_recipe(method):
    preset = OBJECTIVES[method].preset("snli")
    assert (preset["lr"], preset["batch_size"], preset["max_length"], preset["epochs"]) == (2e-5, 120, 80, 20)
    assert preset["method_args"]["beta"] == 5.0 and preset["method_args"]["alpha"] == 0.7


def test_named_rift_recipes_ignore_the_task_and_plain_rift_has_none_elsewhere():
    assert OBJECTIVES["rift-imdb"].preset("sst2")["max_length"] == 300
    assert OBJECTIVES["rift-snli"].preset("imdb")["batch_size"] == 120
    assert OBJECTIVES["rift"].preset("sst2") == {}


def test_freelbpp_steps_follow_textdefender_by_task():
    steps = {
        task: OBJECTIVES["freelbpp"].preset(task)["method_args"]["steps"]
        for task in ("imdb", "sst2", "ag_news", "snli")
    }
    assert steps == {"imdb": 10, "sst2": 30, "ag_news": 30, "snli": 10}
    args = OBJECTIVES["freelbpp"].preset("sst2")["method_args"]
    assert (args["step_size"], args["init_mag"], args["max_norm"]) == (0.03, 0.05, 0.0)
    assert OBJECTIVES["freelb"].preset("sst2")["method_args"]["steps"] == 5


def test_baseline_recipes():
    ascc = OBJECTIVES["ascc"].preset("sst2")["method_args"]
    assert (ascc["beta"], ascc["entropy_weight"], ascc["steps"], ascc["entropy_norm"]) == (4.0, 10.0, 5, "tokens")
    pgd = OBJECTIVES["pgd"].preset("sst2")["method_args"]
    assert (pgd["steps"], pgd["step_size"], pgd["init_mag"]) == (5, 0.03, 0.05)
    assert OBJECTIVES["trades"].preset("sst2")["method_args"]["beta"] == 6.0
    assert OBJECTIVES["standard"].preset("sst2") == {}


def test_adversarial_baselines_train_with_textdefenders_recipe():
    for method in ("pgd", "freelb", "freelbpp", "trades", "infobert", "ascc"):
        preset = OBJECTIVES[method].preset("sst2")
        assert (preset["lr"], preset["weight_decay"], preset["batch_size"], preset["epochs"]) == (2e-5, 1e-6, 32, 10)
        assert preset["warmup_ratio"] == 0.0 and preset["max_length"] == 128, method
        assert preset["lr_schedule"] == ("constant" if method == "ascc" else "cosine"), method
    assert OBJECTIVES["pgd"].preset("imdb")["max_length"] == 256


def test_a_preset_fills_only_the_keys_the_user_left_unset_and_is_recorded():
    from robustft.config import build_config
    from robustft.training.method import resolve_method

    cfg = build_config(TrainConfig, [], ["method=rift-imdb", "task=imdb", "epochs=2", "method_args.beta=3"])
    applied = resolve_method(cfg).applied
    assert (cfg.lr, cfg.batch_size, cfg.max_length, cfg.lr_schedule) == (2e-5, 32, 300, "constant")
    assert cfg.epochs == 2 and "epochs" not in applied  # the user's value wins
    assert cfg.method_args["beta"] == 3 and cfg.method_args["alpha"] == 0.1  # per key: the user's beta, the alpha
    assert applied["lr"] == 2e-5 and applied["method_args"]["alpha"] == 0.1 and "beta" not in applied["method_args"]


def test_runs_record_how_the_method_departs_from_its_release():
    from robustft.config import build_config
    from robustft.training.method import resolve_method

    cfg = build_config(TrainConfig, [], ["method=rift-snli", "task=snli"])
    notes = resolve_method(cfg).notes()
    assert notes["preset"]["applied"]["max_grad_norm"] == 0.0
    assert any("clean dev accuracy" in d for d in notes["deviations"])
    assert any("grouped by length" in d for d in notes["deviations"])
    assert not any("clipped" in d for d in notes["deviations"])  # the release recipe does not clip, nor do we
    clipped = build_config(TrainConfig, [], ["method=rift", "task=sst2", "group_by_length=false"])
    assert [d for d in resolve_method(clipped).notes()["deviations"] if "clipped" in d or "length" in d] == [
        "RIFT: gradients clipped at norm 1 (the release does not clip)"
    ]
    ascc = build_config(TrainConfig, [], ["method=ascc", "task=snli"])
    assert len(resolve_method(ascc).notes()["deviations"]) == 2
    assert resolve_method(build_config(TrainConfig, [], ["task=sst2"])).notes() is None  # standard: nothing to record
