"""studies/cpu_queue.sh names studies that exist: each entry a bench config or preset the bench accepts, with its
--skip patterns selecting jobs it really has (a renamed config or method would otherwise stop the queue mid-way)."""

import re
import shlex
from pathlib import Path

import pytest

from robustft.bench.plan import plan
from robustft.bench.presets import bench_config

ROOT = Path(__file__).resolve().parents[1]


def queued_studies() -> list[list[str]]:
    text = (ROOT / "studies" / "cpu_queue.sh").read_text(encoding="utf-8")
    block = re.search(r"^STUDIES=\((.*?)^\)", text, re.S | re.M).group(1)
    return [shlex.split(line.strip().strip('"')) for line in block.splitlines() if line.strip()]


def test_the_queue_holds_the_studies_in_the_project_s_order():
    names = [args[0] for args in queued_studies()]
    assert names == ["configs/rift-frontier-sst2.yaml", "configs/textdefender-sst2.yaml"]


@pytest.mark.parametrize("args", queued_studies(), ids=lambda a: a[0])
def test_each_queued_study_builds_and_its_skips_leave_out_real_jobs(args, monkeypatch):
    monkeypatch.chdir(ROOT)
    spec, rest = args[0], args[1:]
    skips = [rest[i + 1] for i, flag in enumerate(rest) if flag == "--skip"]
    cfg = bench_config(spec, [])
    everything = plan(cfg).chosen
    kept = plan(cfg, skip=skips or None).chosen
    assert everything and kept
    assert len(kept) < len(everything) if skips else kept == everything
