"""The mutation-testing set-up (`make mutation`, docs/testing.md) names modules and test files that exist, and the
tools it needs are pinned: the mutation run itself is outside CI's time, so this is what keeps it from rotting."""

import importlib.util
import re
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("mutation_script", ROOT / "scripts" / "mutation.py")
mutation = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mutation)


def test_every_module_and_test_file_named_for_mutation_exists():
    modules = mutation.load_modules()
    assert modules, "scripts/mutation.toml names no module"
    names = [m["name"] for m in modules]
    assert len(names) == len(set(names)), f"module names repeat: {names}"
    for m in modules:
        assert (ROOT / m["path"]).is_file(), f"scripts/mutation.toml: {m['name']}: no file {m['path']}"
        assert m["path"].startswith("src/robustft/") and m["path"].endswith(".py")
        assert m["tests"], f"scripts/mutation.toml: {m['name']} names no test file"
        for t in m["tests"]:
            assert re.fullmatch(r"tests/test_\w+\.py", t), f"{m['name']}: {t} is not a test file path"
            assert (ROOT / t).is_file(), f"scripts/mutation.toml: {m['name']}: no test file {t}"


def test_each_modules_mutmut_section_mutates_it_alone_and_runs_only_its_tests():
    module = {"name": "x", "path": "src/robustft/evaluation/stats.py", "tests": ["tests/a.py", "tests/b.py"]}
    section = tomllib.loads(mutation.mutmut_section(module))["tool"]["mutmut"]
    assert section["only_mutate"] == ["src/robustft/evaluation/stats.py"]
    assert section["pytest_add_cli_args_test_selection"] == ["tests/a.py", "tests/b.py"]
    assert "not slow" in section["pytest_add_cli_args"]


def test_a_module_without_its_tests_is_refused(tmp_path):
    bad = tmp_path / "m.toml"
    bad.write_text('[[module]]\nname = "x"\npath = "src/robustft/evaluation/stats.py"\n')
    with pytest.raises(ValueError, match="x lacks \\['tests'\\]"):
        mutation.load_modules(bad)


def test_the_makefile_target_runs_the_script_and_the_tools_are_pinned():
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^mutation:.*\n\t.*scripts/mutation\.py", makefile, re.M), "Makefile has no mutation target"
    test_extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["test"]
    pins = dict(p.split("==") for p in test_extra if "==" in p)
    assert "mutmut" in pins and "hypothesis" in pins, f"test extra lacks exact pins: {test_extra}"
