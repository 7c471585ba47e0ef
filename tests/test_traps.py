"""Issue 67, "no silent wrong experiment": a run's model is scored on what it was trained on, a user's file on the
rows the model did not train on, a Python caller's explicit values beat a method's preset (which is printed), and a
SAFER / RanMASK / DNE model card says how to get the ensemble. Each test failed on the code before the fix."""

import csv
import json

import pytest

from robustft.cli import main
from robustft.config import TrainConfig
from robustft.errors import ConfigError
from robustft.training.loop import train
from robustft.training.method import resolve_method
from train_helpers import tiny_train_config


def run(argv, capsys) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def write_reviews(path, n, start=0):
    """A two-class CSV of n rows (ids from `start`, so two files with different starts differ in content)."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow(["review", "sentiment"])
        for i in range(start, start + n):
            out.writerow([f"{'a great' if i % 2 else 'a dull'} film, number {i}", "pos" if i % 2 else "neg"])
    return path


QUIET = ["--progress", "false", "--precision", "fp32", "--max_length", "16"]


@pytest.fixture(scope="module")
def mr_run(tiny_model_dir, tmp_path_factory):
    """A tiny model trained one epoch on MR (not the default task, SST-2)."""
    folder = tmp_path_factory.mktemp("mr") / "run"
    return train(tiny_train_config(tiny_model_dir, folder, task="mr", max_length=16))


@pytest.fixture(scope="module")
def file_run(tiny_model_dir, tmp_path_factory):
    """A tiny model trained on a 40-row CSV: its dev split is 4 rows (10%), its train split the other 36."""
    folder = tmp_path_factory.mktemp("file")
    data = write_reviews(folder / "reviews.csv", 40)
    settings = dict(epochs=1, batch_size=8, max_length=16, precision="fp32", checkpoint_every=0, progress=False)
    cfg = TrainConfig(model=tiny_model_dir, data=str(data), output_dir=str(folder / "run"), **settings)
    return train(cfg), data


# Trap 1: eval and attack of a run folder score the run's own task or file


def test_eval_of_a_run_scores_the_task_it_was_trained_on(mr_run, tmp_path, capsys):
    argv = ["eval", "--model", str(mr_run), "-n", "8", "--output_dir", str(tmp_path / "e")]
    code, out, err = run([*argv, *QUIET], capsys)
    assert code == 0
    assert out.startswith("mr/dev: accuracy ")  # before: sst2
    assert "trained on task mr: scoring it there" in err  # one line says so


def test_an_explicit_task_is_kept(mr_run, tmp_path, capsys):
    argv = ["eval", "--model", str(mr_run), "--task", "sst2", "-n", "8", "--output_dir", str(tmp_path / "e")]
    code, out, err = run([*argv, *QUIET], capsys)
    assert code == 0 and out.startswith("sst2/dev: accuracy ") and "trained on" not in err


def test_attack_of_a_run_attacks_the_task_it_was_trained_on(mr_run, tmp_path, capsys):
    out = tmp_path / "a"
    argv = ["attack", "--model", str(mr_run), "--recipe", "deepwordbug", "-n", "2", "--output_dir", str(out)]
    code, _, err = run([*argv, *QUIET], capsys)
    assert code == 0
    assert json.loads((out / "config.json").read_text())["config"]["task"] == "mr"  # before: sst2
    assert "trained on task mr: scoring it there" in err


def test_eval_of_a_run_trained_on_a_file_scores_that_files_held_out_rows(file_run, tmp_path, capsys):
    folder, data = file_run
    code, out, err = run(["eval", "--model", str(folder), "--output_dir", str(tmp_path / "e"), *QUIET], capsys)
    assert code == 0
    result = json.loads((tmp_path / "e" / "metrics.json").read_text())
    trained = json.loads((folder / "config.json").read_text())["config"]["task"]
    assert result["task"] == trained and result["split"] == "dev"  # before: sst2/dev
    assert result["n"] == 4  # 10% of the 40 rows
    assert f"trained on data file {data.resolve()}" in err


# Trap 2: a --data file's default rows


def test_eval_of_another_file_scores_all_its_rows(file_run, tmp_path, capsys):
    folder, _ = file_run
    other = write_reviews(tmp_path / "held_out.csv", 60, start=1000)
    argv = ["eval", "--model", str(folder), "--data", str(other), "--output_dir", str(tmp_path / "e")]
    code, out, err = run([*argv, *QUIET], capsys)
    assert code == 0
    assert "(n=60)" in out  # before: 6, the 10% "dev" slice
    assert "scoring all its 60 rows" in err


def test_attack_of_the_training_file_attacks_only_its_held_out_rows(file_run, tmp_path, capsys):
    folder, data = file_run
    out = tmp_path / "a"
    argv = ["attack", "--model", str(folder), "--data", str(data), "--recipe", "deepwordbug", "--output_dir", str(out)]
    code, _, err = run([*argv, *QUIET], capsys)
    assert code == 0
    lines = (out / "examples.jsonl").read_text().splitlines()
    assert len(lines) == 4  # the 4 held-out rows; before: all 40, the 36 training rows included
    assert "the 4 of 40 rows held out of training" in err


def test_attacking_training_rows_on_purpose_is_warned(file_run, tmp_path, capsys):
    folder, data = file_run
    argv = ["attack", "--model", str(folder), "--data", str(data), "--split", "test", "--recipe", "deepwordbug"]
    code, _, err = run([*argv, "-n", "2", "--output_dir", str(tmp_path / "a"), *QUIET], capsys)
    assert code == 0
    assert "holds the 36 rows the model was trained on" in err


# Trap 3: explicit values beat a method's preset, and the preset is printed


@pytest.mark.parametrize("method", ["safer", "pgd", "freelb", "freelbpp", "trades", "infobert", "ascc"])
def test_explicit_values_equal_to_the_defaults_beat_the_preset(method):
    cfg = TrainConfig(method=method, epochs=3, lr=5e-5)  # 3 and 5e-5 are TrainConfig's defaults
    applied = resolve_method(cfg).applied
    assert (cfg.epochs, cfg.lr) == (3, 5e-5)  # before: 10 and 2e-5
    assert "epochs" not in applied and "lr" not in applied
    assert cfg.weight_decay == 1e-6  # a key left unset still takes the preset's value


def test_a_value_assigned_after_construction_beats_the_preset():
    cfg = TrainConfig(method="pgd")
    cfg.epochs = 3
    resolve_method(cfg)
    assert cfg.epochs == 3 and cfg.lr == 2e-5  # lr unset: the preset's


def test_the_cli_prints_and_logs_the_preset_it_applied(tiny_model_dir, tmp_path, capsys):
    out = tmp_path / "run"
    argv = ["train", "--model", tiny_model_dir, "--method", "pgd", "--n_train", "8", "--n_dev", "8", "--epochs", "1"]
    code, _, err = run([*argv, "--batch_size", "8", "--output_dir", str(out), *QUIET], capsys)
    assert code == 0
    for text in (err, (out / "train.log").read_text()):
        assert "method pgd: its preset set lr=2e-05" in text and "method_args.steps=5" in text
        assert "epochs=" not in text.split("preset set")[1].split("\n")[0]  # --epochs 1 was given: not the preset's


def test_a_wrong_kind_of_value_stops_at_validate_with_one_line():
    with pytest.raises(ConfigError, match=r"^epochs: expects a whole number, got 'three'$"):
        TrainConfig(epochs="three").validate()


# Trap 4: the model card of an ensemble model says what pipeline gives and how to get the ensemble


def test_an_ensemble_models_card_says_pipeline_is_the_bare_classifier_and_how_to_get_the_ensemble(tmp_path):
    from robustft.models.factory import tiny_bert
    from robustft.models.model_card import write_model_card

    model, tokenizer = tiny_bert(num_labels=2, seed=0)
    model.config.robustft_ensemble = {"kind": "safer", "copies": 3}
    folder = tmp_path / "best"
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    card = write_model_card(folder, {"method": "safer", "task": "sst2"}).read_text()
    assert "bare classifier" in card and "without its ensemble" in card  # before: pipeline recommended, no word
    code = card.split("```python\n")[-1].split("```")[0].replace("path/to/best", str(folder))
    space = {}
    exec(code, space)  # the card's own recipe gives the ensemble
    assert type(space["model"]).__name__ == "EnsembleClassifier"


def test_a_plain_models_card_has_no_ensemble_section(tmp_path, tiny_model_dir):
    import shutil

    from robustft.models.model_card import write_model_card

    folder = tmp_path / "best"
    shutil.copytree(tiny_model_dir, folder)
    assert "ensemble" not in write_model_card(folder, {"method": "standard"}).read_text().lower()
