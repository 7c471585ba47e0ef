"""A user's own data: a CSV / TSV / JSONL file (`--data`) or a Hugging Face dataset (`--dataset`) is a task like the
registered ones, for every verb; its columns are named or detected, its labels listed, its content in the run hash,
and a bad row is an error naming the file and line."""

import csv
import json

import pytest

from checked_config import checked
from robustft.cli import main
from robustft.config import TrainConfig, config_hash
from robustft.data.tasks import get_task, load_examples
from robustft.errors import ConfigError, DataFormatError


def write_reviews(path, n=40):
    """A separable two-class CSV whose columns are not called text and label."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow(["id", "review", "sentiment"])
        for i in range(n):
            good = i % 2 == 0
            out.writerow(
                [i, f"{'a great, lovely' if good else 'a dull, awful'} film, number {i}", "pos" if good else "neg"]
            )
    return path


def train_args(model_dir, out):
    return [
        "--model",
        model_dir,
        "--epochs",
        "1",
        "--batch_size",
        "8",
        "--max_length",
        "16",
        "--precision",
        "fp32",
        "--progress",
        "false",
        "--output_dir",
        str(out),
    ]


def test_train_and_eval_on_a_csv_with_detected_columns_and_listed_labels(tiny_model_dir, tmp_path, capsys):
    data = write_reviews(tmp_path / "reviews.csv")
    assert main(["train", "--data", str(data), *train_args(tiny_model_dir, tmp_path / "run")]) == 0
    described = json.loads((tmp_path / "run" / "config.json").read_text())
    cfg = described["config"]
    assert cfg["data_columns"] == {"text": "review", "text_pair": None, "label": "sentiment"}
    assert cfg["data_labels"] == ["neg", "pos"] and cfg["task"].startswith("reviews-")
    assert described["inputs"][f"data:{data.resolve()}"]  # the file's sha256 is one of the run's inputs
    model_config = json.loads((tmp_path / "run" / "best" / "config.json").read_text())
    assert model_config["id2label"] == {"0": "neg", "1": "pos"}
    assert "labels 0=neg, 1=pos" in (tmp_path / "run" / "train.log").read_text()  # the mapping is printed

    capsys.readouterr()
    assert main(["eval", "--model", str(tmp_path / "run"), "--data", str(data), "--split", "test"]) == 0
    assert "(n=40)" in capsys.readouterr().out  # test: every row of the file


def test_a_changed_file_is_a_new_run_and_the_split_is_fixed(tmp_path):
    data = write_reviews(tmp_path / "reviews.csv")
    first = checked(TrainConfig(data=str(data)))
    again = checked(TrainConfig(data=str(data)))
    assert config_hash(first) == config_hash(again)
    dev = load_examples(first.task, "dev")
    assert len(dev) == 4 and len(load_examples(first.task, "train")) == 36
    write_reviews(data, n=41)
    changed = checked(TrainConfig(data=str(data)))
    assert config_hash(changed) != config_hash(first) and changed.task != first.task


def test_named_columns_make_a_pair_task_from_json_lines(tmp_path):
    data = tmp_path / "pairs.jsonl"
    rows = [{"q": f"question {i}", "a": f"answer {i}", "y": i % 3} for i in range(12)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = checked(TrainConfig(data=str(data), data_columns={"text": "q", "text_pair": "a", "label": "y"}))
    task = get_task(cfg.task)
    assert task.is_pair and task.perturb_field == "text_b" and task.label_names == ("0", "1", "2")
    first = load_examples(cfg.task, "test")[0]
    assert (first.text_a, first.text_b, first.label) == ("question 0", "answer 0", 0)


def test_label_names_given_name_numeric_labels_in_id_order(tmp_path):
    data = tmp_path / "scores.tsv"
    data.write_text("sentence\tlabel\n" + "".join(f"text {i}\t{i % 2}\n" for i in range(10)))
    cfg = checked(TrainConfig(data=str(data), data_labels=["bad", "good"]))
    assert get_task(cfg.task).label_names == ("bad", "good")
    assert [e.label for e in load_examples(cfg.task, "test")][:4] == [0, 1, 0, 1]


@pytest.mark.parametrize(
    "content,line,problem",
    [
        ("review,sentiment\ngood film,pos\nbad film,neg\nfine,pos,extra\n", 4, "3 comma-separated fields"),
        ("review,sentiment\ngood film,pos\n   ,neg\n", 3, "empty text in field 'review'"),
        ('review,sentiment\ngood film,pos\n"an unclosed, neg\n', 3, None),
        ("review,sentiment\ngood film,pos\nbad film,\n", 3, "label column 'sentiment'"),
        ("review,sentiment\ngood film,pos\n\nbad film,neg\n", 3, "empty line"),
    ],
)
def test_a_bad_csv_row_is_an_error_naming_file_and_line(tmp_path, content, line, problem):
    data = tmp_path / "bad.csv"
    data.write_text(content)
    with pytest.raises(DataFormatError) as caught:
        checked(TrainConfig(data=str(data)))
    assert caught.value.line == line and str(caught.value).startswith(f"{data}:{line}:")
    assert problem is None or problem in caught.value.problem


def test_a_bad_row_stops_the_command_line_with_one_line(tmp_path, capsys):
    data = tmp_path / "bad.csv"
    data.write_text("review,sentiment\ngood film,pos\nbad film,neg,extra\n")
    assert main(["train", "--data", str(data)]) == 2
    assert capsys.readouterr().err.strip() == (f"robustft: error: {data}:3: 3 comma-separated fields, the header has 2")


def test_wrong_combinations_and_missing_columns_are_config_errors(tmp_path):
    data = write_reviews(tmp_path / "reviews.csv")
    with pytest.raises(ConfigError, match="data_columns.text: .* has no column 'body'"):
        checked(TrainConfig(data=str(data), data_columns={"text": "body"}))
    with pytest.raises(ConfigError, match="data_columns: applies only with --data"):
        checked(TrainConfig(data_columns={"text": "review"}))
    with pytest.raises(ConfigError, match="task: 'imdb' and --data"):
        checked(TrainConfig(task="imdb", data=str(data)))
    with pytest.raises(ConfigError, match="label"):
        (tmp_path / "one.csv").write_text("review,sentiment\na,pos\nb,pos\n")
        checked(TrainConfig(data=str(tmp_path / "one.csv")))
    with pytest.raises(ConfigError, match="not a .csv, .tsv or .jsonl"):
        (tmp_path / "x.txt").write_text("a\n")
        checked(TrainConfig(data=str(tmp_path / "x.txt")))


def saved_dataset(folder):
    """A DatasetDict saved with save_to_disk: what a user's `datasets` code (or cache) holds, read offline."""
    import datasets

    features = datasets.Features(
        {"sentence": datasets.Value("string"), "label": datasets.ClassLabel(names=["negative", "positive"])}
    )
    texts = [(f"{'a lovely, great' if i % 2 else 'a dull, awful'} film {i}", i % 2) for i in range(24)]
    split = datasets.Dataset.from_dict({"sentence": [t for t, _ in texts], "label": [y for _, y in texts]}, features)
    datasets.DatasetDict({"train": split, "validation": split.select(range(8))}).save_to_disk(str(folder))
    return folder


def test_train_on_a_saved_hugging_face_dataset_offline(tiny_model_dir, tmp_path):
    folder = saved_dataset(tmp_path / "sst_like")
    assert main(["train", "--dataset", str(folder), *train_args(tiny_model_dir, tmp_path / "run")]) == 0
    cfg = json.loads((tmp_path / "run" / "config.json").read_text())["config"]
    assert cfg["data_labels"] == ["negative", "positive"]  # the ClassLabel names, in their id order
    assert cfg["data_columns"]["text"] == "sentence"
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["n_train"] == 24 and metrics["n_dev"] == 8  # validation is dev


def test_load_dataset_of_a_local_csv_folder_with_a_config_name_offline(tmp_path):
    folder = tmp_path / "my_dataset"
    folder.mkdir()
    for split, n in (("train", 20), ("test", 6)):
        write_reviews(folder / f"{split}.csv", n)
    cfg = checked(TrainConfig(dataset=str(folder)))
    task = get_task(cfg.task)
    assert set(task.splits) == {"train", "dev", "test"}  # no validation split: dev is 10% of train
    assert len(load_examples(cfg.task, "dev")) == 2 and len(load_examples(cfg.task, "test")) == 6
    with pytest.raises(Exception, match="dataset: datasets.load_dataset"):
        checked(TrainConfig(dataset=str(tmp_path / "no_such_dataset"), dataset_config="x"))
