"""PSO (Zang et al. 2020): the swarm's update rules on hand-computed cases, and the recipe's invariants against oracles
read straight from the data files (the counter-fitted neighbours, NLTK's stopwords) and a fresh victim."""

import json
import os
from pathlib import Path

import numpy as np
import pytest

from attack_helpers import GOOD, KeywordModel
from robustft.attacks.recipes import build_attack, recipe_config
from robustft.attacks.results import SKIPPED, SUCCEEDED
from robustft.attacks.search.pso import gain_weights, schedule, turn_words, velocity_step
from robustft.attacks.victim import Victim
from robustft.attacks.words import AttackedText
from robustft.data.tasks import load_examples
from robustft.errors import ConfigError
from robustft.models.factory import tiny_bert

DATA = Path(os.environ.get("ROBUSTFT_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


@pytest.fixture(scope="module")
def tok():
    return tiny_bert(num_labels=2, seed=0)[1]


@pytest.fixture(scope="module")
def oracle():
    """(neighbours by word, NLTK stopwords) from the files themselves."""
    table = json.loads((DATA / "synonyms" / "counterfitted_neighbors.json").read_text())
    stop = set((DATA / "nltk_data" / "corpora" / "stopwords" / "english").read_text().split())
    return table, stop


def test_velocity_update_on_a_hand_computed_case():
    # words agree with the local elite at 0 and 2, with the global elite at 1 and 2; v_max 3, omega 0.5:
    # pulls (-3 + 3, 3 - 3, -3 - 3) = (0, 0, -6); v' = 0.5 v + 0.5 pull
    v = velocity_step([1.0, -2.0, 0.5], ("a", "b", "c"), ("a", "x", "c"), ("y", "b", "c"), omega=0.5, v_max=3.0)
    assert v.tolist() == [0.5, -1.0, -2.75]
    # disagreeing with both elites everywhere: pull +6 per word; omega 0.8 keeps 80% of the old velocity
    v = velocity_step(np.zeros(2), ("a", "b"), ("x", "y"), ("x", "y"), omega=0.8, v_max=3.0)
    assert v.tolist() == pytest.approx([1.2, 1.2])


def test_schedule_moves_linearly_from_the_papers_start_to_its_end():
    assert schedule(0, 20) == pytest.approx((0.8, 0.8, 0.2))  # omega, C1, C2 at the start
    assert schedule(10, 20) == pytest.approx((0.5, 0.5, 0.5))  # halfway: 0.6 x 0.5 + 0.2, 0.8 - 0.3, 0.2 + 0.3
    assert schedule(19, 20) == pytest.approx((0.23, 0.23, 0.77))


def test_turn_takes_the_other_word_where_the_draw_is_below_the_probability():
    source, target = ("a", "b", "c", "d"), ("a", "x", "y", "z")
    # position 0: same word; 1: 0.5 < 0.9 taken; 2: 0.5 >= 0.1 kept; 3: 0.95 >= 0.9 kept
    assert turn_words(source, target, [0.9, 0.9, 0.1, 0.9], [0.5, 0.5, 0.5, 0.95]) == {1: "x"}
    assert turn_words(source, target, [1.0] * 4, [0.0] * 4) == {1: "x", 2: "y", 3: "z"}


def test_mutation_weights_are_the_positive_gains_normalised_or_uniform():
    assert gain_weights([0.2, -0.1, 0.0, 0.6]) == pytest.approx([0.25, 0.0, 0.0, 0.75])
    assert gain_weights([0.0, -1.0]) == [0.5, 0.5]


def test_pso_recipe_keeps_the_papers_swarm_and_refuses_bad_settings():
    config = recipe_config("pso")
    assert (config["population"], config["generations"], config["v_max"]) == (60, 20, 3.0)
    with pytest.raises(ConfigError, match="recipe_args.population"):
        recipe_config("pso", overrides={"population": 0})
    with pytest.raises(ConfigError, match="recipe_args.v_max"):
        recipe_config("pso", overrides={"v_max": -1.0})


def check_record(record, example, oracle, model, tok):
    """Swaps only at non-stopwords, each to one of the word's counter-fitted neighbours; the recorded prediction is
    the model's on the adversarial text; a success is a wrong prediction."""
    table, stop = oracle
    original, adversarial = AttackedText(record.original), AttackedText(record.adversarial)
    assert adversarial.num_words == original.num_words
    changed = [i for i in range(original.num_words) if original.words[i] != adversarial.words[i]]
    assert changed == [s["index"] for s in record.swaps]
    for i in changed:
        word = original.words[i].lower()
        assert word not in stop and adversarial.words[i].lower() in table[word][:8]
    probs = Victim(model, tok, "sst2").probs([example.with_field("text_a", record.adversarial)])[0]
    assert int(probs.argmax()) == record.adversarial_pred
    assert (record.result == SUCCEEDED) == (int(probs.argmax()) != example.label) or record.result == SKIPPED


def test_pso_on_the_keyword_victim_meets_every_invariant_and_repeats_with_its_seed(tok, oracle):
    model = KeywordModel(tok)
    attack = build_attack("pso", Victim(model, tok, "sst2"), overrides={"population": 10, "generations": 5})
    records = [attack.run(e, i, seed=3) for i, e in enumerate(GOOD)]
    for record, example in zip(records, GOOD, strict=True):
        check_record(record, example, oracle, model, tok)
    assert sum(r.result == SUCCEEDED for r in records) >= 2  # "good" -> "alright" and the like flip it
    again = [attack.run(e, i, seed=3) for i, e in enumerate(GOOD)]
    assert [(r.adversarial, r.queries) for r in again] == [(r.adversarial, r.queries) for r in records]


def test_pso_stops_at_its_query_budget(tok):
    model = KeywordModel(tok)
    settings = {"population": 10, "generations": 5, "query_budget": 12}
    attack = build_attack("pso", Victim(model, tok, "sst2"), overrides=settings)
    record = attack.run(GOOD[0], 0, 0)
    assert record.queries <= 12


@pytest.mark.slow
def test_pso_runs_on_the_real_minilm_and_sst2(oracle):
    from robustft.models.factory import load_classifier

    model, tok = load_classifier("minilm", ("negative", "positive"))
    examples = load_examples("sst2", "dev", n=3, seed=0)
    attack = build_attack("pso", Victim(model, tok, "sst2"), overrides={"query_budget": 300})
    for i, example in enumerate(examples):
        record = attack.run(example, i, 0)
        assert record.queries <= 300
        check_record(record, example, oracle, model, tok)
