"""configs/textdefender-sst2-mpnet.yaml is textdefender-sst2's protocol on another backbone (issue 64 item 5): every
bench file builds its plan, the slice keeps the table's settings but model, precision, seeds and the methods it
leaves out, and studies/gpu_textdefender_mpnet.sh's per-method globs select real jobs, each job exactly once."""

import re
from pathlib import Path

import pytest
import yaml

from robustft.bench.plan import plan
from robustft.bench.presets import bench_config

ROOT = Path(__file__).resolve().parents[1]
SLICE = "configs/textdefender-sst2-mpnet.yaml"
TABLE = "configs/textdefender-sst2.yaml"


def bench_files() -> list[str]:
    """configs/*.yaml that are benches (a `methods` table; the others are `train --config` files)."""
    found = (p for p in (ROOT / "configs").glob("*.yaml") if "methods" in yaml.safe_load(p.read_text(encoding="utf-8")))
    return sorted(p.relative_to(ROOT).as_posix() for p in found)


def test_the_slice_is_one_of_the_bench_files():
    assert SLICE in bench_files() and TABLE in bench_files()


@pytest.mark.parametrize("spec", bench_files())
def test_every_bench_file_builds_its_plan(spec, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert plan(bench_config(spec, [])).jobs


def test_the_slice_is_the_table_s_protocol_on_mpnet():
    table = yaml.safe_load((ROOT / TABLE).read_text(encoding="utf-8"))
    part = yaml.safe_load((ROOT / SLICE).read_text(encoding="utf-8"))
    for key in ("tasks", "sizes", "baseline", "eval_precision", "train", "evals", "attacks"):
        assert part[key] == table[key], key
    assert part["model"] == "mpnet" and table["model"] == "minilm"
    assert part["name"] != table["name"]  # its own bench folder: the rows never mix
    assert set(part["seeds"]) <= set(table["seeds"])
    assert all(table["methods"][m] == spec for m, spec in part["methods"].items())


def test_the_script_runs_every_job_of_the_slice_once_method_by_method(monkeypatch):
    monkeypatch.chdir(ROOT)
    script = (ROOT / "studies" / "gpu_textdefender_mpnet.sh").read_text(encoding="utf-8")
    assert f"config={SLICE}" in script
    methods = re.search(r"^methods=\(([^)]*)\)", script, re.M).group(1).split()
    cfg = bench_config(SLICE, [])
    every = [j.id for j in plan(cfg).jobs]
    # by hand: 3 methods x 1 seed x (a training, dev, test and 5 attacks; the certify eval only on SAFER/RanMASK)
    assert len(every) == 3 * 1 * (1 + 2 + 5)
    picked = [j.id for m in methods for j in plan(cfg, only=f"{m}/*").chosen]
    assert sorted(picked) == sorted(every)
