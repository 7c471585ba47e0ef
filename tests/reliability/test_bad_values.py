"""Nothing accepted that makes a wrong model (issue 52, items 4, 5, 6, 8).

Every bad value of `bad_value_cases.CASES` stops at the config loader with a one-line error naming its key; values
YAML would misread stay strings for string keys; an IM model whose solves mostly fall back is never passed off as
IM; a data file missing from a local data root fails at once, without the Hub's DNS retries. A few cases go
through the `robustft` command end to end (marked slow: a process each).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from bad_value_cases import CASES, STRING_KEYS, YAML_LOOKALIKES, outcome

import robustft
from robustft.config import EvalConfig, TrainConfig, build_config
from robustft.errors import ConfigError

SRC = Path(robustft.__file__).resolve().parents[1]
OFFLINE_VARS = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE")


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_value_is_a_one_line_error_naming_the_key(case):
    kind, detail = outcome(case)
    assert kind == "clean", f"{case.name}: {kind}: {detail} (expected a message with {case.expected!r})"


@pytest.mark.parametrize("key", STRING_KEYS)
@pytest.mark.parametrize("text", YAML_LOOKALIKES)
def test_string_keys_keep_the_text_as_typed(key, text):
    cfg = build_config(TrainConfig, [], [f"{key}={text}"])
    assert getattr(cfg, key) == text


@pytest.mark.parametrize(
    "override,key,value",
    [
        ("seed=1e3", "seed", 1000),
        ("n_train=none", "n_train", None),
        ("progress=off", "progress", False),
        ("group_by_length=yes", "group_by_length", True),
        ("lr=1e-4", "lr", 1e-4),
        ("checkpoint_every_s=600", "checkpoint_every_s", 600.0),
    ],
)
def test_number_and_bool_keys_read_their_declared_type(override, key, value):
    got = getattr(build_config(TrainConfig, [], [override]), key)
    assert got == value and type(got) is type(value)


def test_dotted_keys_and_config_files_still_read_yaml(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("im: {K: 3, layers: 4-6}\nmethod_args: {beta: 5}\nmethod: rift\n")
    cfg = build_config(TrainConfig, [str(path)], ["im.eta=0.05", "method_args.alpha=0.7", "im.beta=null"])
    assert cfg.im == {"K": 3, "layers": "4-6", "eta": 0.05, "beta": None}
    assert cfg.method_args == {"beta": 5, "alpha": 0.7}


def test_the_default_run_folder_is_never_used_for_a_typed_output_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    from robustft.training.loop import run_dir_for

    for typed in ("null", "none", "yes", "1e3"):
        assert run_dir_for(build_config(TrainConfig, [], [f"output_dir={typed}"])) == Path(typed)
    with pytest.raises(ConfigError, match="starts with '~'"):
        build_config(TrainConfig, [], ["output_dir=~"])


def test_every_numeric_objective_argument_has_a_range():
    # a new argument without a range would let a negative weight or zero steps through again
    from robustft.training.objectives import OBJECTIVES
    from robustft.training.objectives.base import ARG_BOUNDS, declared_args, type_name

    missing = [
        f"{name}.{arg}"
        for name, cls in OBJECTIVES.items()
        for arg, hint in declared_args(cls).items()
        if "number" in type_name(hint) and arg not in {**ARG_BOUNDS, **cls.arg_bounds}
    ]
    assert not missing, f"numeric method arguments without a range in ARG_BOUNDS: {missing}"


def test_method_presets_pass_their_own_checks():
    from robustft.training.objectives import OBJECTIVES, check_method_args

    for name, cls in OBJECTIVES.items():
        for task in ("sst2", "imdb", "snli"):
            check_method_args(name, cls.preset(task).get("method_args", {}))


# --- IM solves that fall back ----------------------------------------------------------------------------------


@pytest.fixture
def falling_back_model(tiny_model_dir):
    """A tiny IM model whose every solve falls back (eta forced past its range, as a model from before the range
    check would have it): what a run with --im.eta 1e30 used to save as IM."""
    from robustft.models.factory import load_classifier
    from robustft.models.im import convert, encoder_layers

    model, tokenizer = load_classifier(tiny_model_dir)
    convert(model, arch="im", layers="1-2", K=2)
    for layer in encoder_layers(model)[:2]:
        object.__setattr__(layer.im_settings, "eta", 1e30)
    return model.eval(), tokenizer


def forward_once(model, tokenizer) -> None:
    import torch

    with torch.no_grad():
        model(**tokenizer(["a fine film", "a dull and long film"], return_tensors="pt", padding=True))


def test_fallback_share_above_the_limit_stops_evaluation_unless_allowed(falling_back_model):
    from robustft.evaluation.run import im_fallback
    from robustft.models.im_layer import ImFallbackError

    model, tokenizer = falling_back_model
    forward_once(model, tokenizer)
    with pytest.raises(ImFallbackError, match=r"100.0% of the IM solves fell back .*--allow_im_fallback"):
        im_fallback(model, EvalConfig(model="m"))
    assert im_fallback(model, EvalConfig(model="m", allow_im_fallback=True)) == {"im_fallback_share": 1.0}


def test_a_healthy_im_model_records_its_share_and_a_plain_one_none(tiny_model_dir):
    from robustft.evaluation.run import im_fallback
    from robustft.models.factory import load_classifier
    from robustft.models.im import convert

    model, tokenizer = load_classifier(tiny_model_dir)
    assert im_fallback(model.eval(), EvalConfig(model="m")) == {}
    convert(model, arch="im", layers="1-2", K=2, eta=0.01)
    forward_once(model, tokenizer)
    assert im_fallback(model, EvalConfig(model="m")) == {"im_fallback_share": 0.0}


def test_fallback_share_counts_solves_over_every_layer():
    from robustft.models.im_layer import MAX_FALLBACK_SHARE, ImFallbackError, check_fallback_share, fallback_share

    stats = {"layer 1": {"examples": 100, "diverged": 4}, "layer 2": {"examples": 100, "diverged": 8}}
    assert fallback_share(stats) == pytest.approx(0.06)
    assert fallback_share({"layer 1": {"examples": 0, "diverged": 0}}) is None
    check_fallback_share(MAX_FALLBACK_SHARE, allowed=False, where="x")  # at the limit: fine
    with pytest.raises(ImFallbackError, match="x: 6.0% of the IM solves"):
        check_fallback_share(0.06, allowed=False, where="x")
    check_fallback_share(0.06, allowed=True, where="x")


# --- offline when the data is local ----------------------------------------------------------------------------


def test_offline_switch_restores_variables_and_constants(monkeypatch):
    import datasets.config
    import huggingface_hub.constants

    from robustft.resources import hub_offline_when_data_is_local

    for name in OFFLINE_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", False)
    with hub_offline_when_data_is_local() as offline:
        assert offline and huggingface_hub.constants.HF_HUB_OFFLINE and datasets.config.HF_HUB_OFFLINE
        assert all(os.environ[name] == "1" for name in OFFLINE_VARS)
    assert not huggingface_hub.constants.HF_HUB_OFFLINE and not datasets.config.HF_HUB_OFFLINE
    assert not any(name in os.environ for name in OFFLINE_VARS)
    monkeypatch.delenv("ROBUSTFT_DATA")
    with hub_offline_when_data_is_local() as offline:  # no local data root: a user with a network uses the Hub
        assert not offline and not huggingface_hub.constants.HF_HUB_OFFLINE


MISSING_FILE_SCRIPT = """
import time
from robustft.data import tasks
from robustft.errors import MissingResource
start = time.perf_counter()
try:
    tasks.load_examples("ag_news", "test")
except MissingResource as exc:
    print(f"{time.perf_counter() - start:.2f}")
    print(exc)
"""


@pytest.mark.slow  # a Python process with the offline variables unset
def test_missing_local_data_file_fails_at_once_with_its_path(tmp_path):
    # ag_news has a Hub twin: with the offline variables unset, `datasets` used to retry DNS for 25-40 s
    env = {k: v for k, v in os.environ.items() if k not in OFFLINE_VARS}
    env.update(ROBUSTFT_DATA=str(tmp_path), PYTHONPATH=str(SRC))
    proc = subprocess.run(
        [sys.executable, "-c", MISSING_FILE_SCRIPT], env=env, capture_output=True, text=True, timeout=300
    )
    lines = proc.stdout.splitlines()
    assert len(lines) == 2, proc.stdout + proc.stderr[-2000:]
    assert float(lines[0]) < 5.0, f"the missing file took {lines[0]} s to report"
    assert f"missing data file {tmp_path / 'ag_news' / 'test.csv'}" in lines[1]


# --- end to end: the command -----------------------------------------------------------------------------------


def run_train(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    command = [sys.executable, "-m", "robustft.cli", "train", *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, cwd=cwd)


@pytest.mark.slow  # a robustft process per case
@pytest.mark.parametrize(
    "args,expected",
    [
        (["--arch", "im", "--im.eta", "inf"], "im.eta: must be a finite number"),
        (["--threads", "1000000000"], "threads: must be at most"),
        (["--method", "rift", "--method_args.beta", "abc"], "method_args.beta"),
        (["--output_dir", "~"], "output_dir: '~' starts with '~'"),
    ],
)
def test_cli_exits_2_with_one_line_and_writes_nothing(args, expected, tmp_path):
    proc = run_train([*args, "--n_train", "8"], tmp_path)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("robustft: error:")]
    assert len(errors) == 1 and expected in errors[0], proc.stderr[-2000:]
    assert not list(tmp_path.iterdir()), "a refused run left a folder (the default runs/ or '~')"
