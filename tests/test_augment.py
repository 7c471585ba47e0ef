"""`robustft augment`: the rows written against the variants computed here from the counter-fitted file and NLTK's
stopwords, the seed's determinism, and a one-line error for each bad argument."""

import csv
import json
import os
import re
from pathlib import Path

import pytest

from robustft.attacks.augment import augment_file
from robustft.cli import main

DATA = Path(os.environ.get("ROBUSTFT_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
ROWS = [("the movie was good", "1"), ("a slow , dull story", "0"), ("good bad", "1")]


@pytest.fixture(scope="module")
def oracle():
    table = json.loads((DATA / "synonyms" / "counterfitted_neighbors.json").read_text())
    stop = set((DATA / "nltk_data" / "corpora" / "stopwords" / "english").read_text().split())
    return table, stop


@pytest.fixture
def data(tmp_path):
    path = tmp_path / "reviews.csv"
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "text", "label"])
        writer.writerows([(n, text, label) for n, (text, label) in enumerate(ROWS)])
    return path


def read(path: Path) -> list[dict]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def one_swap_variants(text: str, table, stop) -> set[str]:
    """Every text with one non-stopword replaced by one of its (one-word) counter-fitted neighbours."""
    words = text.split(" ")
    out = set()
    for i, word in enumerate(words):
        if word.isalpha() and word not in stop:
            for n in table.get(word, [])[:8]:
                if re.fullmatch(r"[a-z]+(?:['-][a-z]+)*", n) and n != word:
                    out.add(" ".join(words[:i] + [n] + words[i + 1 :]))
    return out


def test_one_swap_variants_are_exactly_the_neighbour_swaps_with_the_rest_of_the_row_kept(data, tmp_path, oracle):
    out = tmp_path / "augmented.csv"
    # pct 0.2: one swap per variant on rows of 2-5 words; 100 variants asked, so every distinct one is written
    written = augment_file("embedding", data, out, n_per_example=100, pct_words=0.2, seed=0)
    rows = read(out)
    assert len(rows) == written
    for n, (text, label) in enumerate(ROWS[:2]):
        mine = [r for r in rows if r["id"] == str(n)]
        assert mine[0] == {"id": str(n), "text": text, "label": label}  # the original first
        assert all(r["label"] == label for r in mine)
        assert {r["text"] for r in mine[1:]} == one_swap_variants(text, *oracle)
        assert len(mine) - 1 == len(one_swap_variants(text, *oracle))  # no variant twice


def test_each_variant_swaps_the_share_of_words_asked(data, tmp_path, oracle):
    table, _ = oracle
    out = tmp_path / "augmented.csv"
    augment_file("embedding", data, out, n_per_example=3, pct_words=1.0, seed=1, keep=False)
    both = [r["text"].split(" ") for r in read(out) if r["id"] == "2"]  # "good bad": both words swapped
    assert len(both) == 3 and len({tuple(w) for w in both}) == 3
    assert all(w[0] in table["good"] and w[1] in table["bad"] for w in both)


def test_the_same_seed_writes_the_same_bytes_and_another_seed_other_draws(data, tmp_path):
    paths = [tmp_path / f"out{n}.csv" for n in range(3)]
    for path, seed in zip(paths, (5, 5, 6), strict=True):
        augment_file("charswap", data, path, n_per_example=2, pct_words=0.5, seed=seed)
    assert paths[0].read_bytes() == paths[1].read_bytes()
    assert paths[0].read_bytes() != paths[2].read_bytes()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--recipe", "embeding"], "unknown recipe 'embeding' (did you mean 'embedding'?)"),
        (["--recipe", "wordnet", "--pct_words", "0"], "--pct_words must be in (0, 1]"),
        (["--recipe", "wordnet", "--n_per_example", "0"], "--n_per_example must be a whole number >= 1"),
        (["--recipe", "wordnet", "--column", "review"], "has no column 'review'"),
    ],
)
def test_bad_arguments_stop_with_one_line(args, message, data, tmp_path, capsys):
    code = main(["augment", "--data", str(data), "--out", str(tmp_path / "out.csv"), *args])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out.csv").exists()


def test_the_input_file_is_never_overwritten(data, capsys):
    before = data.read_bytes()
    assert main(["augment", "--recipe", "wordnet", "--data", str(data), "--out", str(data)]) == 2
    assert "is the input file" in capsys.readouterr().err and data.read_bytes() == before
