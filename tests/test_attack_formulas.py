"""Formulas pinned to TextAttack 0.3.11 / the papers: PWWS's order, the angular similarity and its window,
the most-similar-success rule, the genetic selection and early stop, both query units, pair accounting,
the stopword lists and the part-of-speech window."""

import math

import numpy as np
import pytest

from attack_helpers import KeywordModel
from robustft import resources
from robustft.attacks.constraints import PartOfSpeech, SentenceSimilarity, StopwordModification
from robustft.attacks.constraints import similarity as similarity_module
from robustft.attacks.goal import GoalResult
from robustft.attacks.recipes import build_attack
from robustft.attacks.results import SUCCEEDED, summarize
from robustft.attacks.search.genetic import Genetic
from robustft.attacks.search.greedy import most_similar_success, pwws_priority
from robustft.attacks.victim import Victim
from robustft.attacks.words import AttackedText
from robustft.data.example import Example
from robustft.models.factory import tiny_bert


@pytest.fixture(scope="module")
def keyword():
    _, tok = tiny_bert()
    return KeywordModel(tok), tok


def test_pwws_priority_is_softmax_saliency_times_gain():
    unk, initial, best = np.array([0.2, 0.5, 0.3]), 0.1, np.array([0.6, np.nan, 0.4])
    weights = np.exp([0.1, 0.4, 0.2]) / np.exp([0.1, 0.4, 0.2]).sum()  # softmax of the drops of p(true)
    np.testing.assert_allclose(pwws_priority(unk, initial, best, "delta"), weights * [0.5, 0.0, 0.3])
    np.testing.assert_allclose(pwws_priority(unk, initial, best, "raw"), weights * [0.6, 0.0, 0.4])  # TextAttack


class RecordingEncoder:
    """Unit vectors by string; remembers every string it was asked to encode."""

    def __init__(self):
        self.seen = []

    def __call__(self, texts):
        self.seen += list(texts)
        return np.stack(
            [np.array([1.0, 0.0]) if t.startswith("a") else np.array([math.cos(0.5), math.sin(0.5)]) for t in texts]
        )


@pytest.fixture
def recording(monkeypatch):
    encoder = RecordingEncoder()
    monkeypatch.setattr(similarity_module, "get_encoder", lambda name: encoder)
    return encoder


def test_angular_similarity_and_its_threshold(recording):
    sim = SentenceSimilarity(window_size=None, threshold=0.840845)
    assert sim._sim(np.array([1.0, 0.0, -1.0])) == pytest.approx([1.0, 0.5, 0.0])
    # TextFooler's "1 - angle >= 0.5" with the angle not divided by pi is angular >= 1 - 0.5 / pi.
    assert sim._sim(np.array([math.cos(0.5)]))[0] == pytest.approx(1 - 0.5 / math.pi)
    assert 1 - 0.5 / math.pi == pytest.approx(0.840845, abs=1e-6)
    text = AttackedText("a b c")
    kept = sim.filter([text.replace_word(0, "x")], text, text)  # "a b c" vs "x b c": angle 0.5
    assert kept and sim.last_scores["x b c"] == pytest.approx(1 - 0.5 / math.pi)


@pytest.mark.parametrize(
    ("index", "size", "n", "window"),
    [
        (0, 15, 20, (0, 15)),
        (6, 15, 20, (0, 15)),
        (7, 15, 20, (0, 15)),
        (10, 15, 20, (3, 18)),
        (12, 15, 20, (5, 20)),
        (19, 15, 20, (5, 20)),
        (5, 4, 10, (3, 7)),
        (3, 15, 9, (0, 9)),
    ],
)
def test_window_is_textattacks_text_window_around_index(index, size, n, window):
    text = AttackedText(" ".join(f"w{i}" for i in range(n)))
    assert text.window(index, size) == window
    lo, hi = window
    assert hi - lo == min(size, n)


def test_window_strings_and_short_texts_score_one(recording):
    sim = SentenceSimilarity(window_size=15, compare_against_original=False, skip_text_shorter_than_window=True)
    long = AttackedText(" ".join(f"w{i}" for i in range(20)))
    sim.filter([long.replace_word(10, "new")], long, long)
    assert recording.seen[-2:] == [
        " ".join(f"w{i}" for i in range(3, 18)),
        " ".join(f"w{i}" if i != 10 else "new" for i in range(3, 18)),
    ]
    short = AttackedText("a short text")
    before = len(recording.seen)
    out = sim.filter([short.replace_word(1, "tiny")], short, short)
    assert len(out) == 1 and sim.last_scores["a tiny text"] == 1.0 and len(recording.seen) == before


def result(score, succeeded, text):
    return GoalResult(AttackedText(text), np.array([1 - score, score]), score, succeeded)


def test_most_similar_success_stops_at_the_first_non_success_and_prefers_the_higher_score():
    ranked = [result(0.9, True, "s1"), result(0.8, True, "s2"), result(0.7, False, "f"), result(0.6, True, "s3")]
    sims = {"s1": 0.5, "s2": 0.7, "f": 0.99, "s3": 0.95}
    assert most_similar_success(ranked, lambda t: sims[t.text]).text.text == "s2"  # s3 is behind a failure
    assert most_similar_success(ranked, lambda t: 1.0).text.text == "s1"  # all tied (short texts): top score


def test_genetic_selection_direction():
    scores = [0.1, 0.9]
    ours = Genetic(temperature=0.3)._select_probs(scores)
    textattack = Genetic(temperature=0.3, compat="textattack")._select_probs(scores)
    expected = math.exp(0.9 / 0.3) / (math.exp(0.1 / 0.3) + math.exp(0.9 / 0.3))
    assert ours[1] == pytest.approx(expected) and textattack[0] == pytest.approx(expected)


@pytest.mark.parametrize("compat", ["alzantot", "textattack"])
def test_genetic_stops_when_the_first_population_succeeds_and_counts_both_units(keyword, compat):
    model, tok = keyword
    attack = build_attack(
        "genetic",
        Victim(model, tok, "sst2"),
        overrides={"population": 4, "generations": 40, "lm_scorer": None, "compat": compat},
    )
    record = attack.run(Example("a good", 1), 0, 0)  # "a" is a stopword: only "good" (6 neighbours) moves
    assert record.result == SUCCEEDED
    # Each member's first perturbation tries the six swaps of "good"; all but "nice" (a cue word) flip
    # the victim, so generation 0 stops the search: no crossover child is ever evaluated.
    assert record.distinct_queries == 1 + 6  # the original and each neighbour of "good" once
    if compat == "alzantot":
        assert record.queries == 1 + 4 * 6  # TextAttack's unit: four members ask for the same six texts
    else:  # TextAttack also draws "a" (weight epsilon = 1), which costs a draw but no query
        assert (record.queries - 1) % 6 == 0 and 1 + 6 <= record.queries <= 1 + 4 * 6


def test_pwws_counts_its_repeated_candidates_textattacks_way(keyword):
    model, tok = keyword
    record = build_attack("pwws", Victim(model, tok, "sst2")).run(Example("a good , nice story", 1), 0, 0)
    summary = summarize([record])
    # The ranking evaluates every substitute once; the search asks for those of the visited words again.
    assert record.queries > record.distinct_queries
    assert summary["avg_num_queries"] == record.queries
    assert summary["avg_num_distinct_queries"] == record.distinct_queries


PREMISE = "the people in the picture are standing near a large old building in the city"  # 15 words
HYPOTHESIS = "good great fine nice good film"  # 6 words, 5 cues


@pytest.mark.parametrize(("pair_words", "words", "cap", "flips"), [("joint", 21, 7, True), ("perturbed", 6, 2, False)])
def test_pair_task_denominators(keyword, pair_words, words, cap, flips):
    model, tok = keyword
    attack = build_attack(
        "textfooler",
        Victim(model, tok, "rte"),
        overrides={
            "similarity": None,
            "pos_context": "sentence",
            "max_percent": 0.3,
            "query_budget_per_word": 50,
            "pair_words": pair_words,
        },
    )
    record = attack.run(Example(PREMISE, 1, HYPOTHESIS), 0, 0)
    assert record.num_words == words and math.ceil(0.3 * words) == cap
    assert attack._budget(words) == 50 * words
    assert len(record.swaps) <= cap and (record.result == SUCCEEDED) == flips
    assert record.original == HYPOTHESIS and record.context == PREMISE
    assert all(HYPOTHESIS.split()[s["index"]] == s["original"] for s in record.swaps)  # indices in the hypothesis
    if flips:
        assert summarize([record])["avg_perturbed_word_pct"] == pytest.approx(100 * len(record.swaps) / 21)


def test_each_recipe_uses_its_stopword_list(keyword):
    model, tok = keyword
    lists = {}
    for name in ("pwws", "textfooler", "bert-attack", "genetic"):
        attack = build_attack(
            name,
            Victim(model, tok, "sst2"),
            overrides={"lm_scorer": None} if name == "genetic" else {"similarity": None},
        )
        (stop,) = [c for c in attack.constraints if isinstance(c, StopwordModification)]
        lists[name] = (stop.source, len(stop.words))
    assert lists == {
        "pwws": ("nltk", 179),
        "textfooler": ("textfooler", 266),
        "bert-attack": ("textfooler", 266),
        "genetic": ("nltk", 179),
    }
    assert len(resources.textfooler_stopwords()) == 266
    text = AttackedText("anyway the acting across scenes")
    assert StopwordModification("textfooler").modifiable(text) == {2, 4}
    assert StopwordModification("nltk").modifiable(text) == {0, 2, 3, 4}


def test_pos_tags_textattacks_window_of_the_original_text(monkeypatch):
    pos = PartOfSpeech(context="textattack")
    seen = []
    real = PartOfSpeech.tags.__wrapped__

    def tags(self, words):
        seen.append(words)
        return real(self, words)

    monkeypatch.setattr(PartOfSpeech, "tags", tags)
    original = AttackedText("one two three four five six good eight nine ten eleven twelve")
    current = original.replace_word(1, "second")
    pos.filter([current.replace_word(6, "fine")], current, original)
    assert seen == [
        ("three", "four", "five", "six", "good", "eight", "nine", "ten"),
        ("three", "four", "five", "six", "fine", "eight", "nine", "ten"),
    ]


def test_textattack_compat_never_swaps_a_word_twice(keyword):
    import random

    from robustft.attacks.attack import AttackContext
    from robustft.attacks.goal import UntargetedClassification
    from robustft.attacks.view import TextView

    model, tok = keyword
    attack = build_attack(
        "genetic",
        Victim(model, tok, "sst2"),
        overrides={"lm_scorer": None, "compat": "textattack", "max_percent": None},
    )
    original = AttackedText("a good")
    goal = UntargetedClassification(attack.victim, TextView.of(Example("a good", 1), "text_a"))
    attack.victim.reset(None)
    initial = goal.evaluate([original])[0]
    ctx = AttackContext(original, goal, attack.transformation, attack.constraints, random.Random(0), initial)
    member = goal.evaluate([original.replace_word(1, "nice")])[0]  # "good" already swapped (to another cue)
    out, weights = attack.search._ta_perturb(ctx, member, [1, 6])
    assert out is member and attack.victim.queries == 2  # nothing tried: "a" is a stopword, "nice" was swapped
    assert weights == [1, 6]  # draws that found no candidate leave the weights alone (TextAttack)
