"""The command line a person expects: --version, `methods`, help that states each default once, the closest name for
a mistyped one, eval saying where it wrote (and warning at majority-class level), attack's summary printed once."""

import re
from pathlib import Path

import pytest
import tomllib

from robustft.cli import at_majority_level, main
from robustft.config import VERB_CONFIGS, describe_keys

ROOT = Path(__file__).resolve().parents[1]


def run(argv, capsys) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse: --version, --help and usage errors
        code = exc.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_version_is_the_one_in_pyproject(capsys):
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert run(["--version"], capsys)[:2] == (0, f"robustft {version}\n")


def test_methods_lists_archs_methods_recipes_presets_and_tasks(capsys):
    code, out, _ = run(["methods"], capsys)
    assert code == 0
    lines = {line.split(":")[0]: line for line in out.splitlines() if ":" in line and not line.startswith(" ")}
    assert "plain, im, ex" in lines["archs (train --arch)"]
    assert "rift-snli" in lines["methods (train --method)"] and "standard" in lines["methods (train --method)"]
    assert "textfooler" in lines["recipes (attack --recipe)"] and "bert-attack" in lines["recipes (attack --recipe)"]
    assert "quick" in lines["presets (bench PRESET)"] and "lowresource" in lines["presets (bench PRESET)"]
    assert re.search(r"^  sst2 +negative/positive; splits: train, dev, test", out, re.M)
    assert re.search(r"^  advglue-sst2 ", out, re.M)


@pytest.mark.parametrize("verb", sorted(VERB_CONFIGS))
def test_help_states_each_default_once(verb):
    for line in describe_keys(VERB_CONFIGS[verb]).splitlines():
        assert len(re.findall(r"\(default|by default|the default\)", line)) <= 1, line


def test_help_shows_a_plain_default_and_keeps_an_explained_one():
    keys = {line.split()[0]: line for line in describe_keys(VERB_CONFIGS["attack"]).splitlines()}
    assert re.search(r" \(default \d+\)$", keys["--batch_size"])
    assert "(default: test if the task has one, else dev)" in keys["--split"]
    assert keys["--recheck_full_precision"].count("default") == 1  # "(default true)", not also "(default None)"


def test_readme_and_help_agree_on_the_attack_default_split():
    readme = (ROOT / "README.md").read_text()
    assert "no --split: the task's test split (dev if it has none)" in readme
    keys = {line.split()[0]: line for line in describe_keys(VERB_CONFIGS["attack"]).splitlines()}
    assert "test if the task has one, else dev" in keys["--split"]


@pytest.mark.parametrize(
    "argv,hint",
    [
        (["trian"], "did you mean 'train'?"),
        (["atack", "--model", "x"], "did you mean 'attack'?"),
        (["train", "--task", "sst3"], "did you mean 'sst2'?"),
        (["train", "--method", "ritf"], "did you mean 'rift'?"),
        (["bench", "quik", "--list"], "did you mean 'quick'?"),
    ],
)
def test_a_mistyped_name_gets_the_closest_one(argv, hint, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = run(argv, capsys)
    assert code == 2 and hint in err


def test_a_mistyped_recipe_gets_the_closest_one():
    from robustft.attacks.recipes import recipe_config
    from robustft.errors import ConfigError

    with pytest.raises(ConfigError, match="did you mean 'pwws'"):
        recipe_config("pwss")


def test_eval_says_where_it_wrote_and_warns_at_majority_level(tiny_model_dir, tmp_path, capsys):
    out = tmp_path / "eval"
    argv = ["eval", "--model", tiny_model_dir, "--task", "sst2", "--split", "dev", "-n", "40", "--precision", "fp32"]
    code, stdout, err = run([*argv, "--progress", "false", "--output_dir", str(out)], capsys)
    assert code == 0 and f"run folder {out}" in err
    metrics = __import__("json").loads((out / "metrics.json").read_text())  # stdout: one summary line
    assert ("majority-class baseline" in err) == at_majority_level(metrics)
    code, _, err = run([*argv, "--progress", "false", "--output_dir", str(out)], capsys)
    assert code == 0 and "(reused)" in err and f"run folder {out}" in err


def test_majority_level_means_the_interval_reaches_the_majority_accuracy():
    assert at_majority_level({"accuracy": 0.55, "accuracy_ci95": [0.45, 0.65], "majority_accuracy": 0.51})
    assert not at_majority_level({"accuracy": 0.85, "accuracy_ci95": [0.82, 0.88], "majority_accuracy": 0.51})


def test_attack_prints_its_summary_once_and_where_it_wrote(tiny_model_dir, tmp_path, capsys):
    out = tmp_path / "attack"
    argv = ["attack", "--model", tiny_model_dir, "--task", "sst2", "--split", "dev", "--recipe", "pwws", "-n", "2"]
    code, stdout, err = run([*argv, "--query_budget", "20", "--progress", "false", "--output_dir", str(out)], capsys)
    assert code == 0
    assert (stdout + err).count("Attack success rate") == 1 and "Attack success rate" in stdout
    assert f"run folder: {out}" in err


def test_version_outside_a_checkout_is_the_installed_one(tmp_path, monkeypatch):
    from importlib import metadata

    from robustft import version

    (tmp_path / "pyproject.toml").write_text('[project]\nname = "other"\nversion = "9.9"\n')
    monkeypatch.setattr(version, "PYPROJECT", tmp_path / "pyproject.toml")
    assert version.read_version() == metadata.version("robustft")
    monkeypatch.setattr(version, "PYPROJECT", ROOT / "pyproject.toml")
    assert version.read_version() == tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
