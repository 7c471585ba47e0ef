"""The composition API: docs/attacks.md's example run exactly as written on a tiny model (so the docs cannot rot), its
records checked against the counter-fitted file and a fresh model; a wrong part stops with one line naming it."""

import json
import os
import re
from pathlib import Path

import pytest

from attack_helpers import KeywordModel
from robustft.attacks.compose import CounterfittedNeighbours, GreedyWordImportance, Victim, compose
from robustft.attacks.results import SUCCEEDED
from robustft.attacks.words import AttackedText
from robustft.data.example import Example
from robustft.errors import ConfigError
from robustft.models.factory import tiny_bert

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("ROBUSTFT_DATA", ROOT.parent / "shared" / "data"))


def documented_example() -> str:
    text = (ROOT / "docs" / "attacks.md").read_text(encoding="utf-8")
    after = text.split("<!-- example: compose", 1)[1]
    return re.search(r"```python\n(.*?)```", after, re.S).group(1)


@pytest.fixture(scope="module")
def tok():
    return tiny_bert(num_labels=2, seed=0)[1]


def test_the_documented_example_runs_and_its_records_hold(tok, capsys):
    model = KeywordModel(tok)  # positive while it has more positive cue words than negative ones
    namespace = {"model": model, "tokenizer": tok}
    exec(compile(documented_example(), "docs/attacks.md", "exec"), namespace)
    table = json.loads((DATA / "synonyms" / "counterfitted_neighbors.json").read_text())
    fresh = Victim(model, tok, "sst2")
    for record, wanted in ((namespace["record"], lambda p: p != 1), (namespace["targeted"], lambda p: p == 0)):
        assert record.result == SUCCEEDED  # "good" and "nice" both swapped for non-cue neighbours
        original, adversarial = AttackedText(record.original), AttackedText(record.adversarial)
        changed = [i for i in range(original.num_words) if original.words[i] != adversarial.words[i]]
        assert changed == [s["index"] for s in record.swaps] and len(changed) <= 2  # ceil(0.5 x 4 words)
        assert all(adversarial.words[i] in table[original.words[i]] for i in changed)
        prediction = int(fresh.predict([Example(record.adversarial, 1)])[0])
        assert wanted(prediction) and prediction == record.adversarial_pred
        assert record.queries <= 200
    assert capsys.readouterr().out.startswith("succeeded |")


@pytest.mark.parametrize(
    "parts, message",
    [
        ({"transformation": "wordnet"}, "compose: transformation must be a Transformation"),
        ({"constraints": [None]}, "compose: constraints[0] must be a Constraint"),
        ({"search": GreedyWordImportance}, "compose: search must be a Search"),
        ({"query_budgte": 5}, "no engine setting 'query_budgte' (did you mean 'query_budget'?)"),
    ],
)
def test_a_wrong_part_is_named_in_one_line(parts, message, tok):
    given = {"transformation": CounterfittedNeighbours(), "constraints": [], "search": GreedyWordImportance("delete")}
    with pytest.raises(ConfigError) as error:
        compose(Victim(KeywordModel(tok), tok, "sst2"), **{**given, **parts})
    assert message in str(error.value) and "\n" not in str(error.value)
