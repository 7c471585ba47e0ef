"""The attack runner on the run layer: streamed records, crash and resume, --first, errors retried; the CLI."""

import json

import pytest

from attack_helpers import GOOD, KeywordModel
from robustft import runs
from robustft.attacks.example_loop import run_attack
from robustft.attacks.recipes import build_attack
from robustft.attacks.results import AttackRecord
from robustft.attacks.victim import Victim
from robustft.cli import main
from robustft.config import AttackConfig
from robustft.errors import ConfigError
from robustft.models.factory import tiny_bert


def keyword_attack():
    _, tok = tiny_bert(num_labels=2, seed=0)
    return build_attack("textfooler", Victim(KeywordModel(tok), tok, "sst2"), overrides={"similarity": None})


def attack_into(folder, examples, resume=False, first=None, seed=0):
    cfg = AttackConfig(model="keyword", recipe="textfooler", seed=seed, n=len(GOOD))
    with runs.open_run(folder, cfg, {"examples": "fixed"}, resume=resume) as run:
        return run_attack(keyword_attack(), examples, run, progress=False, first=first)


def records_in(folder):
    return runs.load_records(folder / "examples.jsonl")


def test_run_writes_folder_and_resume_after_a_crash_gives_the_same_records(tmp_path):
    full, summary = attack_into(tmp_path / "full", GOOD)
    assert {p.name for p in (tmp_path / "full").iterdir()} >= {
        "config.json",
        "examples.jsonl",
        "metrics.json",
        "examples.csv",
    }
    metrics = json.loads((tmp_path / "full" / "metrics.json").read_text())
    assert metrics["num_examples"] == len(GOOD) and metrics["complete"] is True
    assert summary["num_succeeded"] >= 3  # every positive example flips

    crashed = tmp_path / "crashed"
    attack_into(crashed, GOOD, first=2)
    lines = (crashed / "examples.jsonl").read_text().splitlines(keepends=True)
    (crashed / "examples.jsonl").write_text(lines[0] + lines[1][:25])  # died while writing the second line
    assert len(records_in(crashed)) == 1
    with pytest.raises(ConfigError, match="--resume"):
        attack_into(crashed, GOOD)
    resumed, _ = attack_into(crashed, GOOD, resume=True)
    strip = lambda rs: [{**r.__dict__, "seconds": 0} for r in rs]
    assert strip(resumed) == strip(full)
    assert [r["index"] for r in records_in(crashed)] == [0, 1, 2, 3]


def test_a_corrupt_line_in_the_middle_keeps_the_records_around_it(tmp_path, caplog):
    attack_into(tmp_path, GOOD)
    lines = (tmp_path / "examples.jsonl").read_text().splitlines(keepends=True)
    (tmp_path / "examples.jsonl").write_text(lines[0] + "{not json\n" + "".join(lines[2:]))
    kept = records_in(tmp_path)
    assert [r["index"] for r in kept] == [0, 2, 3]  # only the damaged record is lost, and it is said
    assert "line 2" in caplog.text
    resumed, summary = attack_into(tmp_path, GOOD, resume=True)
    assert [r.index for r in resumed] == [0, 1, 2, 3] and summary["num_examples"] == 4


def test_resume_refuses_changed_settings(tmp_path):
    attack_into(tmp_path, GOOD[:1], first=1, seed=0)
    with pytest.raises(ConfigError, match="settings changed: seed"):
        attack_into(tmp_path, GOOD, resume=True, seed=1)


def test_first_k_now_and_the_rest_on_resume(tmp_path):
    part, summary = attack_into(tmp_path, GOOD, first=2)
    assert [r.index for r in part] == [0, 1] and summary["num_examples"] == 2 and summary["complete"] is False
    rest, summary = attack_into(tmp_path, GOOD, resume=True)
    assert [r.index for r in rest] == [0, 1, 2, 3] and summary["num_examples"] == 4 and summary["complete"] is True


def test_resume_retries_errored_examples(tmp_path):
    attack_into(tmp_path, GOOD[:2], first=2)
    lines = (tmp_path / "examples.jsonl").read_text().splitlines()
    broken = json.loads(lines[1]) | {"result": "error", "reason": "RuntimeError: boom"}
    (tmp_path / "examples.jsonl").write_text(lines[0] + "\n" + json.dumps(broken) + "\n")
    records, summary = attack_into(tmp_path, GOOD[:2], resume=True)
    assert [r.result for r in records] == ["succeeded", "succeeded"] and summary["num_errors"] == 0
    assert [r["result"] for r in records_in(tmp_path)] == ["succeeded", "succeeded"]


def test_cli_attack_on_a_model_folder(tiny_model_dir, tmp_path, capsys):
    out = tmp_path / "run"
    code = main(
        [
            "attack",
            "--model",
            tiny_model_dir,
            "--task",
            "sst2",
            "--split",
            "dev",
            "--recipe",
            "pwws",
            "-n",
            "3",
            "--output_dir",
            str(out),
            "--progress",
            "false",
            "--query_budget",
            "30",
            "--threads",
            "1",
        ]
    )
    assert code == 0
    assert "Attack success rate" in capsys.readouterr().out
    config = json.loads((out / "config.json").read_text())
    assert config["verb"] == "attack" and config["attack"]["recipe"] == "pwws"
    assert config["attack"]["query_budget"] == 30
    assert any(k.startswith("resource/") for k in config["inputs"])
    assert any(k.startswith("model/") for k in config["inputs"]) and "examples" in config["inputs"]
    records = [AttackRecord.from_dict(r) for r in records_in(out)]
    assert len(records) == 3 and all(r.queries <= 30 for r in records)


def test_cli_reports_bad_recipe_settings_in_one_line(tiny_model_dir, tmp_path, capsys):
    args = [
        "attack",
        "--model",
        tiny_model_dir,
        "--split",
        "dev",
        "--recipe",
        "pwws",
        "-n",
        "1",
        "--output_dir",
        str(tmp_path / "a"),
        "--recipe_args.no_such_key",
        "1",
    ]
    assert main(args) == 2
    assert "no setting 'no_such_key'" in capsys.readouterr().err


def test_cli_dispatches_ascc_to_the_white_box_attack(tiny_model_dir, tmp_path):
    out = tmp_path / "ascc"
    assert (
        main(
            [
                "attack",
                "--model",
                tiny_model_dir,
                "--split",
                "dev",
                "--recipe",
                "ascc",
                "-n",
                "2",
                "--output_dir",
                str(out),
                "--progress",
                "false",
                "--threads",
                "1",
            ]
        )
        == 0
    )
    assert len(records_in(out)) == 2 and json.loads((out / "config.json").read_text())["attack"]["recipe"] == "ascc"
