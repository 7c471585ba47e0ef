import json

import pytest

from attack_helpers import GOOD, KeywordModel, one_thread
from robustft.attacks.recipes import build_attack
from robustft.attacks.results import AttackRecord
from robustft.attacks.runner import load_records, run_attack
from robustft.attacks.victim import Victim
from robustft.cli import main
from robustft.errors import ConfigError
from robustft.models.factory import tiny_bert


@pytest.fixture(scope="module", autouse=True)
def single_thread():
    yield from one_thread()


def keyword_attack():
    _, tok = tiny_bert(num_labels=2, seed=0)
    return build_attack("textfooler", Victim(KeywordModel(tok), tok, "sst2"), overrides={"similarity": None})


def test_run_writes_folder_and_resume_after_a_crash_gives_the_same_records(tmp_path):
    config = {"recipe": "textfooler", "model": "keyword"}
    full, summary = run_attack(keyword_attack(), GOOD, tmp_path / "full", dict(config), progress=False)
    assert {p.name for p in (tmp_path / "full").iterdir()} >= {"config.json", "examples.jsonl", "metrics.json",
                                                               "examples.csv"}
    assert json.loads((tmp_path / "full" / "metrics.json").read_text())["num_examples"] == len(GOOD)
    assert summary["num_succeeded"] >= 3  # every positive example flips

    crashed = tmp_path / "crashed"
    run_attack(keyword_attack(), GOOD[:2], crashed, dict(config), progress=False)
    lines = (crashed / "examples.jsonl").read_text().splitlines(keepends=True)
    (crashed / "examples.jsonl").write_text(lines[0] + lines[1][:25])  # died while writing the second line
    assert len(load_records(crashed / "examples.jsonl")) == 1
    with pytest.raises(ConfigError, match="--resume"):
        run_attack(keyword_attack(), GOOD, crashed, dict(config), progress=False)
    resumed, _ = run_attack(keyword_attack(), GOOD, crashed, dict(config), resume=True, progress=False)
    strip = lambda rs: [{**r.__dict__, "seconds": 0} for r in rs]
    assert strip(resumed) == strip(full)
    assert [r.index for r in load_records(crashed / "examples.jsonl")] == [0, 1, 2, 3]


def test_resume_refuses_changed_settings(tmp_path):
    run_attack(keyword_attack(), GOOD[:1], tmp_path, {"recipe": "textfooler", "seed": 0}, progress=False)
    with pytest.raises(ConfigError, match="seed"):
        run_attack(keyword_attack(), GOOD, tmp_path, {"recipe": "textfooler", "seed": 1}, resume=True,
                   progress=False)


def test_cli_attack_on_a_model_folder(tiny_model_dir, tmp_path, capsys):
    out = tmp_path / "run"
    code = main(["attack", "--model", tiny_model_dir, "--task", "sst2", "--split", "dev", "--recipe", "pwws",
                 "-n", "3", "--out", str(out), "--no-progress", "--query-budget", "30", "--threads", "1"])
    assert code == 0
    assert "Attack success rate" in capsys.readouterr().out
    config = json.loads((out / "config.json").read_text())
    assert config["attack"]["recipe"] == "pwws" and config["attack"]["query_budget"] == 30
    assert all(len(v["sha256"]) == 64 for v in config["resources"].values()) and config["resources"]
    assert config["model_files"] and config["examples_sha256"]
    records = [AttackRecord.from_json(line) for line in (out / "examples.jsonl").read_text().splitlines()]
    assert len(records) == 3 and all(r.queries <= 30 for r in records)


def test_cli_accepts_a_run_folder_and_reports_bad_settings(tiny_model_dir, tmp_path, capsys):
    import shutil

    run_dir = tmp_path / "train_run"
    shutil.copytree(tiny_model_dir, run_dir / "best")
    args = ["attack", "--model", str(run_dir), "--split", "dev", "--recipe", "pwws", "-n", "1", "--no-progress",
            "--out", str(tmp_path / "a"), "--set", "no_such_key=1"]
    assert main(args) == 2
    assert "no setting 'no_such_key'" in capsys.readouterr().err


def test_first_k_now_and_the_rest_on_resume(tmp_path):
    config = {"recipe": "textfooler"}
    part, summary = run_attack(keyword_attack(), GOOD, tmp_path, dict(config), progress=False, first=2)
    assert [r.index for r in part] == [0, 1] and summary["num_examples"] == 2
    rest, summary = run_attack(keyword_attack(), GOOD, tmp_path, dict(config), resume=True, progress=False)
    assert [r.index for r in rest] == [0, 1, 2, 3] and summary["num_examples"] == 4


def test_resume_retries_errored_examples(tmp_path):
    config = {"recipe": "textfooler"}
    run_attack(keyword_attack(), GOOD[:2], tmp_path, dict(config), progress=False)
    lines = (tmp_path / "examples.jsonl").read_text().splitlines()
    broken = json.loads(lines[1]) | {"result": "error", "reason": "RuntimeError: boom"}
    (tmp_path / "examples.jsonl").write_text(lines[0] + "\n" + json.dumps(broken) + "\n")
    records, summary = run_attack(keyword_attack(), GOOD[:2], tmp_path, dict(config), resume=True, progress=False)
    assert [r.result for r in records] == ["succeeded", "succeeded"] and summary["num_errors"] == 0
    assert [r.result for r in load_records(tmp_path / "examples.jsonl")] == ["succeeded", "succeeded"]


def test_cli_dispatches_ascc_to_the_white_box_attack(tiny_model_dir, tmp_path):
    pytest.importorskip("robustft.attacks.ascc")
    out = tmp_path / "ascc"
    assert main(["attack", "--model", tiny_model_dir, "--split", "dev", "--recipe", "ascc", "-n", "2",
                 "--out", str(out), "--no-progress", "--threads", "1"]) == 0
    records = load_records(out / "examples.jsonl")
    assert len(records) == 2 and json.loads((out / "config.json").read_text())["attack"]["recipe"] == "ascc"
