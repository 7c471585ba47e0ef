"""A study keeps one precision when it moves between machines: 'auto' is bf16 on a CPU with native bf16 and fp32
elsewhere, so a bench resumed on the other kind of machine must not train its remaining cells in the other
precision and pair them with cells trained in the first."""

import json

from robustft import runtime
from robustft.bench.run import bench
from test_bench import tiny_bench


def trained_in(folder) -> str:
    return json.loads((folder / "metrics.json").read_text())["precision"]


def test_a_bench_resumed_where_auto_means_bf16_trains_its_other_cells_as_its_finished_ones(
    tiny_model_dir, tmp_path, monkeypatch, caplog
):
    cfg = tiny_bench(tiny_model_dir, tmp_path / "tiny", precision="auto", eval_precision="fp32", attacks=[])
    cells = tmp_path / "tiny" / "cells"
    monkeypatch.setattr(runtime, "cpu_has_native_bf16", lambda: False)
    bench(cfg, only="bert/*")
    monkeypatch.setattr(runtime, "cpu_has_native_bf16", lambda: True)
    with caplog.at_level("WARNING", logger="robustft"):
        bench(cfg)

    assert trained_in(cells / "bert-sst2-n32-s0") == trained_in(cells / "im-sst2-n32-s0") == "fp32"
    assert "its 1 finished trainings ran in fp32; 'auto' means bf16 on this machine" in caplog.text


def test_a_new_bench_s_auto_is_this_machine_s_choice_and_an_explicit_precision_wins(
    tiny_model_dir, tmp_path, monkeypatch
):
    monkeypatch.setattr(runtime, "cpu_has_native_bf16", lambda: True)
    bench(tiny_bench(tiny_model_dir, tmp_path / "auto", precision="auto", attacks=[]), only="bert/*")
    assert trained_in(tmp_path / "auto" / "cells" / "bert-sst2-n32-s0") == "bf16"

    explicit = tiny_bench(tiny_model_dir, tmp_path / "explicit", precision="bf16", attacks=[])
    bench(explicit, only="bert/*")
    monkeypatch.setattr(runtime, "cpu_has_native_bf16", lambda: False)
    bench(tiny_bench(tiny_model_dir, tmp_path / "explicit", precision="fp32", attacks=[]), only="im/*")
    assert trained_in(tmp_path / "explicit" / "cells" / "im-sst2-n32-s0") == "fp32"
