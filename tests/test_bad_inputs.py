"""Bad input (issue 15): malformed data files, model folders that want to run code or unpickle, broken weights.

Each case must stop with a one-line RobustftError naming the file (and its line), exit 2 from the CLI,
with no traceback and before any model work starts.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import robustft
from bad_data_cases import CASES, build
from robustft.data import tasks
from robustft.errors import RobustftError

REAL_ROOT = Path(os.environ["ROBUSTFT_DATA"]).resolve()
SRC = Path(robustft.__file__).resolve().parents[1]


def run_cli(args: list[str], data_root: Path, stdin_yes: bool = False, **env_extra) -> subprocess.CompletedProcess:
    env = {**os.environ, "ROBUSTFT_DATA": str(data_root), "PYTHONPATH": str(SRC), **env_extra}
    command = [sys.executable, "-m", "robustft.cli", *args]
    if stdin_yes:  # answer "y" to any interactive prompt, as `yes | robustft ...` would
        return subprocess.run(
            "yes | " + " ".join(f"'{c}'" for c in command),
            shell=True,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)


def assert_one_line_error(proc: subprocess.CompletedProcess, *names: str) -> str:
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("robustft: error:")]
    assert len(errors) == 1, proc.stderr[-2000:]
    for name in names:
        assert name in errors[0], errors[0]
    return errors[0]


# --- malformed data files ------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_malformed_data_file_is_a_one_line_error_naming_file_and_line(case, tmp_path, monkeypatch):
    damaged = build(case, REAL_ROOT, tmp_path)
    monkeypatch.setenv("ROBUSTFT_DATA", str(tmp_path))
    with pytest.raises(RobustftError) as err:
        tasks.load_examples(case.task, case.split)
    message = str(err.value)
    assert "\n" not in message
    where = f"{damaged}:{case.line}:" if case.line is not None else f"{damaged}"
    assert where in message, message


def test_undamaged_copies_read_cleanly(tmp_path, monkeypatch):
    # the catalogue's copies are the real layout: without damage every case's split reads
    monkeypatch.setenv("ROBUSTFT_DATA", str(tmp_path))
    for case in {(c.task, c.split): c for c in CASES}.values():
        build(
            case.__class__(case.name, case.task, case.split, case.target, lambda d: d, whole=case.whole),
            REAL_ROOT,
            tmp_path,
        )
        assert tasks.load_examples(case.task, case.split)


CLI_CASES = ["gz truncated", "advglue null record"]  # each a process start (~10 s): two formats suffice


@pytest.mark.slow  # a robustft process per case (the quick tier checks the same files in-process above)
@pytest.mark.parametrize("name", CLI_CASES)
def test_cli_eval_on_a_malformed_file_exits_2_with_one_line(name, tmp_path, tiny_model_dir):
    case = next(c for c in CASES if c.name == name)
    damaged = build(case, REAL_ROOT, tmp_path / "data")
    proc = run_cli(["eval", "--model", tiny_model_dir, "--task", case.task, "--split", case.split], tmp_path / "data")
    line = f"{damaged}:{case.line}" if case.line is not None else str(damaged)
    assert_one_line_error(proc, line)


# --- foreign code --------------------------------------------------------------------------------


def from_pretrained_calls_without_trust_false(path: Path) -> list[str]:
    bad = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "from_pretrained":
            trust = [k for k in node.keywords if k.arg == "trust_remote_code"]
            if not (trust and isinstance(trust[0].value, ast.Constant) and trust[0].value.value is False):
                bad.append(f"{path.relative_to(SRC)}:{node.lineno}")
    return bad


def test_every_from_pretrained_in_src_passes_trust_remote_code_false():
    files = sorted((SRC / "robustft").rglob("*.py"))
    bad = [hit for path in files for hit in from_pretrained_calls_without_trust_false(path)]
    assert not bad, f"from_pretrained without trust_remote_code=False: {bad}"


@pytest.fixture
def remote_code_folder(tmp_path, tiny_model_dir) -> Path:
    """A model folder whose config asks for its own code: importing evil.py would write tmp_path/MARKER
    (transformers imports a copy from its modules cache, so the marker's path is absolute)."""
    folder = tmp_path / "remote"
    shutil.copytree(tiny_model_dir, folder)
    config = json.loads((folder / "config.json").read_text())
    config.update(
        model_type="evilbert",
        architectures=["EvilModel"],
        auto_map={
            "AutoConfig": "evil.EvilConfig",
            "AutoModelForSequenceClassification": "evil.EvilModel",
            "AutoTokenizer": ["evil.EvilTokenizer", None],
        },
    )
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "evil.py").write_text(
        f"import pathlib\npathlib.Path({str(tmp_path / 'MARKER')!r}).write_text('foreign code ran')\n"
        "from transformers import PretrainedConfig\n\n\nclass EvilConfig(PretrainedConfig):\n"
        "    model_type = 'evilbert'\n"
    )
    return folder


@pytest.mark.slow  # a robustft process with `yes |` piped in
def test_remote_code_model_never_runs_even_when_yes_is_piped(remote_code_folder, tmp_path):
    proc = run_cli(
        ["eval", "--model", str(remote_code_folder), "--task", "sst2", "-n", "8"],
        REAL_ROOT,
        stdin_yes=True,
        HF_MODULES_CACHE=str(tmp_path / "hf_modules"),
    )
    assert not (tmp_path / "MARKER").exists(), "the model folder's Python code ran"
    error = assert_one_line_error(proc, str(remote_code_folder))
    assert "trust_remote_code=False" in error


def test_remote_code_refused_by_every_loader(remote_code_folder):
    from robustft.models.factory import ModelLoadError, load_classifier, load_tokenizer

    for load in (load_classifier, load_tokenizer):
        with pytest.raises(ModelLoadError, match="never runs a model's code"):
            load(str(remote_code_folder))
    assert not (remote_code_folder.parent / "MARKER").exists()


# --- broken model folders ------------------------------------------------------------------------


def damaged_weights(folder: Path) -> None:
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])


def garbage_weights(folder: Path) -> None:
    (folder / "model.safetensors").write_bytes(b"\x00" * 64)


def pickle_only(folder: Path) -> None:
    import torch

    (folder / "model.safetensors").unlink()
    torch.save({"weight": torch.zeros(1)}, folder / "pytorch_model.bin")


def broken_config(folder: Path) -> None:
    (folder / "config.json").write_text('{"model_type": "bert", ')


@pytest.mark.parametrize(
    "damage,problem",
    [
        (damaged_weights, "cannot load a model from"),
        (garbage_weights, "cannot load a model from"),
        (pickle_only, "only pickle weights (pytorch_model.bin)"),
        (broken_config, "cannot read"),
    ],
)
def test_broken_model_folder_is_one_line_naming_the_path(damage, problem, tmp_path, tiny_model_dir):
    from robustft.models.factory import ModelLoadError, load_classifier

    folder = tmp_path / "model"
    shutil.copytree(tiny_model_dir, folder)
    damage(folder)
    with pytest.raises(ModelLoadError) as err:
        load_classifier(str(folder))
    assert problem in str(err.value) and str(folder) in str(err.value) and "\n" not in str(err.value)


@pytest.mark.slow  # a robustft process
def test_cli_eval_of_a_pickle_only_folder_exits_2(tmp_path, tiny_model_dir):
    folder = tmp_path / "model"
    shutil.copytree(tiny_model_dir, folder)
    pickle_only(folder)
    assert re.search(
        "never unpickles",
        assert_one_line_error(
            run_cli(["eval", "--model", str(folder), "--task", "sst2", "-n", "8"], REAL_ROOT), str(folder)
        ),
    )
