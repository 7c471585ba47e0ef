"""The Python API is the CLI: the same runtime setup (OpenMP wait policy at import, threads from the config inside
every verb) and the same validation, before any work."""

import os
import subprocess
import sys

import pytest
import torch

import robustft
from robustft import AttackConfig, EvalConfig
from robustft.errors import ConfigError

PRINT_POLICY = "import os, robustft; print(os.environ.get('OMP_WAIT_POLICY'))"


@pytest.mark.parametrize("outside,expected", [(None, "PASSIVE"), ("ACTIVE", "ACTIVE")])
def test_import_sets_a_passive_openmp_wait_unless_the_user_chose_one(outside, expected):
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if outside:
        env["OMP_WAIT_POLICY"] = outside
    done = subprocess.run([sys.executable, "-c", PRINT_POLICY], capture_output=True, text=True, env=env, timeout=120)
    assert done.stdout.strip() == expected


def test_a_verb_called_from_python_sets_the_config_s_threads(tiny_model_dir, tmp_path):
    torch.set_num_threads(2)
    cfg = EvalConfig(model=tiny_model_dir, task="sst2", split="dev", n=4, threads=1, output_dir=str(tmp_path / "e"))
    robustft.evaluate(cfg)
    assert torch.get_num_threads() == 1


def test_attack_refuses_bad_recipe_settings_before_it_loads_anything(tmp_path):
    missing_model = str(tmp_path / "no_such_model")  # loading it would be the first error, were it reached
    with pytest.raises(ConfigError, match="recipe pwws has no setting 'bogus'"):
        robustft.attack(AttackConfig(model=missing_model, recipe="pwws", recipe_args={"bogus": 1}))
    with pytest.raises(ConfigError, match="unknown recipe 'pwz'"):
        robustft.attack(AttackConfig(model=missing_model, recipe="pwz"))
    assert not any(tmp_path.iterdir())
