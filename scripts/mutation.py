"""Mutation testing of the numeric core (`make mutation`; docs/testing.md).

For each module of scripts/mutation.toml, one at a time: a snapshot of src/, tests/ and pyproject.toml goes into
build/mutation/<name>/ with a [tool.mutmut] section that mutates only that module and runs only its test files,
then `mutmut run` there (so the working tree is never mutated in place, and other work in it goes on). The result
per module is build/mutation/<name>.json (every mutant's status, the survivors' diffs) and one row of
build/mutation/summary.md.

    python scripts/mutation.py                # every module
    python scripts/mutation.py stats goal     # the named ones
    python scripts/mutation.py --retest stats # the mutants left alive, against the tests as they are now
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "scripts" / "mutation.toml"
OUT = ROOT / "build" / "mutation"
# mutmut's exit codes per mutant (mutmut.stats.status_by_exit_code, 3.8.1): 1 and 3 are a failing test run.
KILLED = {1, 3}
SURVIVED = {0}
TIMEOUT = {36, 24, -24, 152, 255}


def load_modules(config: Path = CONFIG) -> list[dict]:
    modules = tomllib.loads(config.read_text())["module"]
    for m in modules:
        missing = {"name", "path", "tests"} - set(m)
        if missing:
            raise ValueError(f"{config}: module {m.get('name', '?')} lacks {sorted(missing)}")
    return modules


def mutmut_section(module: dict) -> str:
    """The [tool.mutmut] section for one module: mutate it alone, run only its tests, quietly and fail-fast."""
    tests = ", ".join(json.dumps(t) for t in module["tests"])
    return (
        "\n[tool.mutmut]\n"
        'source_paths = ["src"]\n'
        f"only_mutate = [{json.dumps(module['path'])}]\n"
        f"pytest_add_cli_args_test_selection = [{tests}]\n"
        'pytest_add_cli_args = ["-x", "-q", "-p", "no:cacheprovider", "-m", "not slow"]\n'
        "use_git_change_detection = false\n"  # the snapshot is not a git checkout
        'process_isolation = "forkserver"\n'  # workers forked from a process that ran no test (torch)
    )


def prepare(module: dict) -> Path:
    work = OUT / module["name"]
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    skip = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "src", work / "src", ignore=skip)
    shutil.copytree(ROOT / "tests", work / "tests", ignore=skip)
    pyproject = (ROOT / "pyproject.toml").read_text()
    (work / "pyproject.toml").write_text(pyproject + mutmut_section(module))
    return work


def mutmut(work: Path, *args: str) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("mutmut")
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONHASHSEED="0")
    return subprocess.run(["nice", "-n", "10", str(exe), *args], cwd=work, env=env, text=True, capture_output=True)


def collect(module: dict, work: Path) -> dict:
    meta = work / "mutants" / (module["path"] + ".meta")
    codes = json.loads(meta.read_text())["exit_code_by_key"] if meta.exists() else {}
    if not codes or None in codes.values():
        raise RuntimeError(f"mutmut did not check every mutant; see {work}/run.log")
    status = {}
    for key, code in codes.items():
        status[key] = (
            "killed"
            if code in KILLED
            else "survived"
            if code in SURVIVED
            else "timeout"
            if code in TIMEOUT
            else "no tests"
            if code in (5, 33)
            else f"other({code})"
        )
    survivors = {k: mutmut(work, "show", k).stdout for k, s in sorted(status.items()) if s != "killed"}
    killed = sum(s in ("killed", "timeout") for s in status.values())
    return {
        "module": module["path"],
        "tests": module["tests"],
        "mutants": len(status),
        "killed": killed,
        "score": killed / len(status) if status else None,
        "status": status,
        "not_killed": survivors,
    }


def run_module(module: dict) -> dict:
    work = prepare(module)
    done = mutmut(work, "run", "--max-children", "1")
    (work / "run.log").write_text(done.stdout + done.stderr)
    result = collect(module, work)
    (OUT / f"{module['name']}.json").write_text(json.dumps(result, indent=1) + "\n")
    return result


def retest_module(module: dict) -> dict:
    """Check the mutants a run left alive again, with the tests as they are now (new tests in the same files: a new
    test file changes mutmut's test selection and so needs a whole run); the source snapshot stays as it was."""
    work = OUT / module["name"]
    previous = json.loads((OUT / f"{module['name']}.json").read_text())
    if not previous["not_killed"]:
        return previous
    skip = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "tests", work / "tests", ignore=skip, dirs_exist_ok=True)
    done = mutmut(work, "run", "--max-children", "1", *sorted(previous["not_killed"]))
    (work / "retest.log").write_text(done.stdout + done.stderr)
    result = collect(module, work)
    (OUT / f"{module['name']}.json").write_text(json.dumps(result, indent=1) + "\n")
    return result


def summary_row(name: str) -> str:
    r = json.loads((OUT / f"{name}.json").read_text())
    return f"| {r['module']} | {r['mutants']} | {r['killed']} | {100 * r['score']:.1f}% | {len(r['not_killed'])} |"


def survivor_lines(name: str) -> list[str]:
    """One markdown line per mutant not killed: its function and number, and the changed line before and after."""
    r = json.loads((OUT / f"{name}.json").read_text())
    lines = []
    for key, diff in sorted(r["not_killed"].items()):
        changed = [x[1:].strip() for x in diff.splitlines() if x[:1] in "+-" and x[:3] not in ("+++", "---")]
        lines.append(f"- `{key.rsplit('.', 1)[-1]}` ({r['status'][key]}): `{'` -> `'.join(changed)}`")
    return lines


def main(names: list[str]) -> int:
    retest = "--retest" in names
    names = [n for n in names if n != "--retest"]
    modules = load_modules()
    known = {m["name"] for m in modules}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"unknown module(s) {unknown}; scripts/mutation.toml names {sorted(known)}")
    OUT.mkdir(parents=True, exist_ok=True)
    for module in modules:
        if names and module["name"] not in names:
            continue
        try:
            r = retest_module(module) if retest else run_module(module)
        except RuntimeError as e:  # e.g. its tests fail on the unmutated code: say so and go on to the next module
            print(f"{module['name']}: not measured: {e}", flush=True)
            continue
        print(f"{module['name']}: {r['killed']}/{r['mutants']} killed ({100 * r['score']:.1f}%)", flush=True)
    rows = [summary_row(m["name"]) for m in modules if (OUT / f"{m['name']}.json").exists()]
    table = "| module | mutants | killed | score | not killed |\n|---|---|---|---|---|\n" + "\n".join(rows) + "\n"
    survivors = [
        f"\n### {m['path']}\n\n" + "\n".join(survivor_lines(m["name"]))
        for m in modules
        if (OUT / f"{m['name']}.json").exists()
    ]
    (OUT / "summary.md").write_text(table + "".join(survivors) + "\n")
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
