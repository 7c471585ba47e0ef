"""studies.pick_by_dev: a bench's methods compared on their selection data only, never before every seed
is in."""

import json
from pathlib import Path

import yaml

from robustft.bench.matrix import expand
from robustft.config import BenchConfig, apply_overrides
from studies import pick_by_dev


def bench_file(tmp_path) -> Path:
    values = {
        "model": "minilm",
        "methods": {"bert": {}, "im-a": {"arch": "im"}, "im-b": {"arch": "im", "im": {"K": 3}}},
        "seeds": [0, 1],
        "sizes": ["subset"],
        "output_dir": str(tmp_path / "bench"),
        "train": {"dev_split": "subset-dev"},
    }
    path = tmp_path / "b.yaml"
    path.write_text(yaml.safe_dump(values))
    return path


def finish(path: Path, accuracies: dict[tuple[str, int], float]) -> None:
    cfg = apply_overrides(BenchConfig(), {"name": "b", **yaml.safe_load(path.read_text())}).validate()
    for job in expand(cfg):
        key = (job.method, job.config.seed)
        if job.kind == "train" and key in accuracies:
            job.folder.mkdir(parents=True)
            metrics = {"complete": True, "best": {"dev_accuracy": accuracies[key]}}
            (job.folder / "metrics.json").write_text(json.dumps(metrics))


def test_picks_the_higher_mean_dev_accuracy_once_every_seed_is_done(tmp_path, capsys):
    path = bench_file(tmp_path)
    finish(path, {("im-a", 0): 0.86, ("im-b", 0): 0.87, ("im-a", 1): 0.88})
    assert pick_by_dev.main([str(path), "im-a", "im-b"]) == 2  # im-b seed 1 is missing
    assert "im-b/sst2/subset/s1 is not finished" in capsys.readouterr().err
    finish(path, {("im-b", 1): 0.86})
    assert pick_by_dev.main([str(path), "im-a", "im-b"]) == 0
    out = capsys.readouterr().out
    assert "im-a: mean 87.00% over 2 seeds (s0 86.00, s1 88.00)" in out and out.endswith("picked: im-a\n")
    assert pick_by_dev.pick({"x": {0: 0.5}, "y": {0: 0.5}}) == "x"  # a tie goes to the one named first


def test_the_pick_becomes_the_advglue_comparison_on_the_other_tasks(tmp_path, capsys):
    path = bench_file(tmp_path)
    finish(path, {("im-a", 0): 0.86, ("im-b", 0): 0.87, ("im-a", 1): 0.86, ("im-b", 1): 0.87})
    out = tmp_path / "advglue.yaml"
    assert pick_by_dev.main([str(path), "im-a", "im-b", "--write", str(out)]) == 0
    text = out.read_text()
    assert "im-b was picked by its mean best subset-dev accuracy over the seeds (im-a 86.00%; im-b 87.00%)" in text
    config = yaml.safe_load(text)
    assert config["name"] == "advglue" and config["tasks"] == ["qqp", "qnli", "rte", "mnli"]
    assert config["seeds"] == [0, 1]
    assert config["methods"] == {"bert": {}, "im-b": {"arch": "im", "im": {"K": 3}}}
    assert config["evals"] == [{"task": "{task}", "split": "dev"}, {"advglue": True}] and "attacks" not in config
    assert config["train"] == {"dev_split": "subset-dev"} and "output_dir" not in config
    assert config["report_with"] == ["b"]  # its SST-2 models are the source bench's
    jobs = expand(apply_overrides(BenchConfig(), {"name": "advglue", **config}).validate())
    assert {j.id for j in jobs if j.kind == "train"} >= {"im-b/mnli/subset/s1", "bert/qqp/subset/s0"}
    assert pick_by_dev.main([str(path), "im-a", "im-b", "--write", str(out)]) == 2  # never over a written one
    assert "exists" in capsys.readouterr().err
