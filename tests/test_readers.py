"""Every registered reader on the real shared data, and clear errors for malformed files."""

import pytest

from robustft.data import tasks
from robustft.errors import DataFormatError

EXPECTED = {  # sizes from ../shared/data/README.md
    ("sst2", "train"): 67349,
    ("sst2", "dev"): 872,
    ("sst2", "test"): 1821,
    ("imdb", "train"): 20000,
    ("imdb", "dev"): 5000,
    ("imdb", "test"): 25000,
    ("mr", "train"): 8529,
    ("ag_news", "test"): 7600,
    ("snli", "train"): 8999,
    ("snli", "dev"): 9842,
    ("snli", "test"): 9824,
    ("qnli", "train"): 10475,
    ("qnli", "dev"): 5463,
    ("rte", "train"): 2490,
    ("rte", "dev"): 277,
    ("qqp", "train"): 8999,
    ("mnli", "train"): 8999,
    ("mnli", "dev"): 1000,
    ("textfooler-imdb", "test"): 1000,
    ("textfooler-snli", "test"): 1000,
    ("advglue-sst2", "dev"): 148,
    ("advglue-qqp", "dev"): 78,
    ("advglue-mnli", "dev"): 121,
    ("advglue-mnli-mm", "dev"): 162,
    ("advglue-qnli", "dev"): 148,
    ("advglue-rte", "dev"): 81,
    ("sst2", "kshot13-train"): 32,
    ("snli", "kshot42-train"): 48,
}


@pytest.mark.parametrize("task_name,split", [(t.name, s) for t in tasks.TASKS.values() for s in t.splits])
def test_every_split_reads_with_valid_labels_and_fields(task_name, split):
    task = tasks.get_task(task_name)
    examples = tasks.load_examples(task_name, split)
    assert examples
    if (task_name, split) in EXPECTED:
        assert len(examples) == EXPECTED[(task_name, split)]
    assert {e.label for e in examples} <= set(range(task.num_labels))
    assert all(e.text_a.strip() for e in examples)
    assert all((e.text_b is not None) == task.is_pair for e in examples)


def test_label_spaces_agree_across_mnli_sources():
    # the same pair carries the same label in TextFooler's numeric file and its word-labelled twin
    numeric = {(e.text_a, e.text_b): e.label for e in tasks.load_examples("textfooler-mnli", "test")}
    worded = {(e.text_a, e.text_b): e.label for e in tasks.load_examples("mnli", "test_mismatched")}
    shared = numeric.keys() & worded.keys()
    assert len(shared) > 900 and all(numeric[k] == worded[k] for k in shared)


def test_samplers_are_seeded_and_class_balanced():
    a = tasks.load_examples("sst2", "train", n=100, seed=1)
    assert a == tasks.load_examples("sst2", "train", n=100, seed=1)
    assert a != tasks.load_examples("sst2", "train", n=100, seed=2)
    balanced = tasks.load_examples("snli", "subset-train", per_class=10, seed=0)
    assert sorted(e.label for e in balanced) == [0] * 10 + [1] * 10 + [2] * 10


def test_snli_kshot_labels_are_the_gold_label_even_with_five_annotators():
    # rows with five annotator votes carry label2..label5 before gold_label: reading gold_label by its
    # header position returned an annotator's vote (5 wrong labels across the SNLI k-shot files)
    from robustft import resources

    names = tasks.get_task("snli").label_names
    for seed in tasks.KSHOT_SEEDS:
        for part in ("train", "dev"):
            split = f"kshot{seed}-{part}"
            path = resources.data_root() / tasks.get_task("snli").splits[split].files[0]
            rows = path.read_text(encoding="utf-8").splitlines()[1:]
            assert [names[e.label] for e in tasks.load_examples("snli", split)] == [r.split("\t")[-1] for r in rows]


def test_split_cache_follows_the_data_root(tmp_path, monkeypatch):
    real = tasks.load_examples("sst2", "dev")
    (tmp_path / "sst2").mkdir()
    (tmp_path / "sst2" / "dev.tsv").write_bytes(b"label\tcontent\n1\tonly one\n")
    monkeypatch.setenv("ROBUSTFT_DATA", str(tmp_path))
    assert [e.text_a for e in tasks.load_examples("sst2", "dev")] == ["only one"] != [e.text_a for e in real]


@pytest.fixture
def broken_root(tmp_path, monkeypatch):
    monkeypatch.setenv("ROBUSTFT_DATA", str(tmp_path))
    (tmp_path / "sst2").mkdir()
    return tmp_path / "sst2"


@pytest.mark.parametrize(
    "content,line,problem",
    [
        (b"label\tcontent\n1\tfine\n7\tbad label\n", 3, "unknown label '7'"),
        (b"label\ttext\n1\tfine\n", 1, "missing column 'content'"),
        (b"label\tcontent\n1\tfine\n\n0\tafter empty\n", 3, "empty line"),
        (b"label\tcontent\n1\t   \n", 2, "empty text"),
        (b"label\tcontent\n1\tok\n0\tcaf\xe9\n", 3, "not valid UTF-8"),
    ],
)
def test_malformed_file_names_file_line_and_problem(broken_root, content, line, problem):
    (broken_root / "dev.tsv").write_bytes(content)
    with pytest.raises(DataFormatError) as err:
        tasks.load_examples("sst2", "dev")
    assert f"dev.tsv:{line}: " in str(err.value) and problem in str(err.value)


def test_missing_file_names_the_file_or_the_failed_hub_call(tmp_path, monkeypatch):
    from robustft.errors import MissingResource

    monkeypatch.setenv("ROBUSTFT_DATA", str(tmp_path))
    with pytest.raises(MissingResource, match="textfooler/ag"):
        tasks.load_examples("textfooler-ag", "test")  # no hub twin
    with pytest.raises(MissingResource, match="load_dataset"):
        tasks.load_examples("ag_news", "test")  # hub twin tried; offline it fails with a clear message
    with pytest.raises(MissingResource, match=f"ROBUSTFT_DATA={tmp_path}"):
        tasks.load_examples("ag_news", "test")  # and says which data folder it looked in
    monkeypatch.setenv("ROBUSTFT_DATA", str(tmp_path / "nowhere"))
    with pytest.raises(MissingResource, match="nowhere is not a folder"):
        tasks.load_examples("sst2", "train")  # a fresh machine without the data folder: the path is named
