"""Character attacks (TextBugger, DeepWordBug): the edits, the Levenshtein budget, seeding, sub-word tokenisers."""

import json
import random
import string

import pytest

from attack_helpers import GOOD, KeywordModel
from robustft.attacks.constraints import LevenshteinEditDistance
from robustft.attacks.constraints.edit_distance import levenshtein
from robustft.attacks.recipes import build_attack
from robustft.attacks.results import SKIPPED, SUCCEEDED
from robustft.attacks.transformations import CharacterEdits
from robustft.attacks.transformations.characters import HOMOGLYPHS
from robustft.attacks.victim import Victim
from robustft.attacks.words import AttackedText, is_one_word, is_substitute
from robustft.data.tasks import load_examples
from robustft.models.factory import tiny_bert
from test_attack_recipes import assert_only_reported_positions_differ

WORDS = ["wonderful", "good", "bad", "It's", "well-made", "AWFUL", "Movie", "ok", "a"]


@pytest.fixture(scope="module")
def tok_model():
    return tiny_bert(num_labels=2, seed=0)


def edits_of(kind, word, seeds=range(40), **kwargs):
    edits = CharacterEdits([kind], **kwargs)
    return {c for s in seeds for c in edits.edited(word, random.Random(s))}


def test_textbugger_bugs_keep_the_first_and_last_character():
    for word in WORDS:
        for kind in ("insert-space", "delete", "swap"):
            for cand in edits_of(kind, word, keep_ends=True):
                assert cand[0] == word[0] and cand[-1] == word[-1], (kind, word, cand)
        for cand in edits_of("insert-space", word, keep_ends=True):
            halves = cand.split(" ")
            assert len(halves) == 2 and "".join(halves) == word and all(is_one_word(h) for h in halves)
        for cand in edits_of("delete", word, keep_ends=True):
            assert len(cand) == len(word) - 1 and levenshtein(word, cand) == 1
        for cand in edits_of("swap", word, keep_ends=True):
            diff = [i for i in range(len(word)) if word[i] != cand[i]]
            assert sorted(cand) == sorted(word) and len(diff) == 2 and diff[1] == diff[0] + 1
    assert edits_of("swap", "bad", keep_ends=True) == set()  # no inner pair to swap
    assert edits_of("insert-space", "ok", keep_ends=True) == set()
    assert edits_of("delete", "a") == set()


def test_look_alikes_are_textattacks_one_to_one_table():
    # pairs copied by hand from TextAttack 0.3.11's WordSwapHomoglyphSwap.homos
    pairs = {"a": "\u0251", "e": "\u0435", "o": "\u043e", "l": "\u217c", "x": "\u00d7", "z": "\u1d22"}
    pairs |= {"1": "l", "0": "O", "7": "\U0001d7d5", "'": "`", "-": "\u02d7"}
    assert all(HOMOGLYPHS[k] == v for k, v in pairs.items())
    assert set(HOMOGLYPHS) == set(string.ascii_lowercase + string.digits + "-'")  # no upper-case key
    assert len(set(HOMOGLYPHS.values())) == len(HOMOGLYPHS) == 38  # one-to-one
    homoglyph = CharacterEdits(["homoglyph"])
    # every character with a look-alike, one candidate each, in order
    assert homoglyph.edited("good", random.Random(0)) == ["\u0261ood", "g\u043eod", "go\u043ed", "goo\u0501"]
    assert homoglyph.edited("GOOD", random.Random(0)) == []  # TextAttack's keys are lower case
    assert homoglyph.edited("F1", random.Random(0)) == []  # "Fl" would be written "FL" (the word's case): dropped
    assert homoglyph.edited("It's", random.Random(0)) == ["I\U0001d69d's", "It`s", "It'\u0455"]


def test_a_look_alike_mark_keeps_the_word_one_word_position():
    text = AttackedText("a well-made box, isn't it")
    marked = text.replace_words({1: "well\u02d7made", 2: "bo\u00d7", 3: "isn`t"})
    assert marked.text == "a well\u02d7made bo\u00d7, isn`t it" and marked.num_words == 5
    assert marked.words == ("a", "well\u02d7made", "bo\u00d7", "isn`t", "it") and marked.modified == {1, 2, 3}
    assert marked.replace_word(4, "them").words[4] == "them"
    assert not is_substitute("bo,x") and is_substitute("bo\u00d7") and is_substitute("go od")


def test_split_spaces_makes_two_words_and_moves_later_positions_on():
    """TextAttack's generate_new_attacked_text: "go od" is two words, both modified; later indices move on by one."""
    text = AttackedText("The movie was good, really good.", split_spaces=True)
    split = text.replace_words({1: "film", 3: "go od"})
    assert split.text == "The film was go od, really good."
    assert split.words == ("The", "film", "was", "go", "od", "really", "good") and split.modified == {1, 3, 4}
    assert split.original_words == ("The", "movie", "was", "good", "good", "really", "good")
    later = split.replace_word(6, "gdoo")  # the last word: original position 5
    assert later.text == "The film was go od, really gdoo." and later.modified == {1, 3, 4, 6}
    again = later.replace_word(5, "re ally")
    assert again.words == ("The", "film", "was", "go", "od", "re", "ally", "gdoo") and again.modified == {
        1,
        3,
        4,
        5,
        6,
        7,
    }
    assert again.swaps() == [  # reported in original words, as without split_spaces
        {"index": 1, "original": "movie", "new": "film"},
        {"index": 3, "original": "good", "new": "go od"},
        {"index": 4, "original": "really", "new": "re ally"},
        {"index": 5, "original": "good", "new": "gdoo"},
    ]
    assert AttackedText("The movie was good", split_spaces=True).replace_word(3, "go od").last_modified == {3, 4}


def test_deepwordbug_edits_are_one_random_character_edit():
    for word in WORDS:
        for kind in ("substitute", "delete", "insert"):
            assert all(levenshtein(word, c) == 1 for c in edits_of(kind, word))
        assert all(sorted(c) == sorted(word) for c in edits_of("swap", word))
    lower = edits_of("insert", "movie", letters="ascii_lowercase", seeds=range(200))
    assert all(c.islower() for c in lower) and len(lower) > 20  # random positions and letters
    fifty = CharacterEdits(["swap", "substitute", "delete", "insert"], draws=50).edited("wonderful", random.Random(0))
    assert 30 < len(fifty) <= 50 and len(set(fifty)) == len(fifty)  # TextDefender: 50 draws, duplicates merged


def test_levenshtein_matches_the_textbook_table_and_bounds_the_text():
    def table(a, b):
        prev = list(range(len(b) + 1))
        for i, ca in enumerate(a, 1):
            cur = [i]
            for j, cb in enumerate(b, 1):
                cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
            prev = cur
        return prev[-1]

    rng = random.Random(0)
    for _ in range(500):
        a = "".join(rng.choice("ab c") for _ in range(rng.randint(0, 90)))
        b = "".join(rng.choice("ab c") for _ in range(rng.randint(0, 90)))
        assert levenshtein(a, b) == table(a, b)
    text = AttackedText("the film is good and the acting is great")
    near, far = text.replace_word(3, "godo"), text.replace_words({3: "bad", 8: "awful"})
    assert levenshtein(text.text, near.text) == 2 and levenshtein(text.text, far.text) == 8
    assert LevenshteinEditDistance(5).filter([near, far], text, text) == [near]
    with pytest.raises(ValueError, match="max_edit_distance"):
        LevenshteinEditDistance(-1)


def test_a_word_split_by_a_space_stays_one_word_position():
    text = AttackedText("The movie was good, really good.")
    split = text.replace_word(3, "go od")
    assert split.words == ("The", "movie", "was", "go od", "really", "good") and split.modified == {3}
    later = split.replace_word(5, "gdoo")
    assert later.text == "The movie was go od, really gdoo." and later.words[3] == "go od"
    assert later.swaps() == [
        {"index": 3, "original": "good", "new": "go od"},
        {"index": 5, "original": "good", "new": "gdoo"},
    ]
    assert later.replace_word(3, "good").modified == {5}  # swapped back
    with pytest.raises(ValueError, match="single word"):
        text.replace_word(3, "go  od")


@pytest.mark.parametrize("name", ["textbugger", "deepwordbug"])
def test_same_seed_same_adversarial_text(name, tok_model):
    model, tok = tok_model
    examples = load_examples("sst2", "dev", n=4, seed=1)

    def run(seed):
        attack = build_attack(name, Victim(model, tok, "sst2"), overrides={"query_budget": 60, "similarity": None})
        return [attack.run(e, i, seed) for i, e in enumerate(examples)]

    first, again, other = run(0), run(0), run(1)
    assert [(r.adversarial, r.queries, r.swaps) for r in first] == [(r.adversarial, r.queries, r.swaps) for r in again]
    if name == "deepwordbug":  # every edit is random: another seed edits differently
        assert [r.swaps for r in first] != [r.swaps for r in other]
    edits = CharacterEdits(["swap", "substitute", "delete", "insert"])
    text = AttackedText(examples[0].text_a)
    seeded = [edits.seeded(random.Random(s)).candidates(text, list(range(text.num_words))) for s in (0, 0, 1)]
    assert seeded[0] == seeded[1] != seeded[2]


@pytest.mark.parametrize("name", ["textbugger", "deepwordbug"])
def test_edited_words_in_unknown_and_several_pieces_reach_the_model_as_written(name, tok_model):
    """Split words and look-alikes tokenise into several or [UNK] pieces (MiniLM's uncased WordPiece): the victim
    scores exactly the edited text, and the records agree with a fresh victim."""
    model, tok = tok_model
    assert tok.tokenize("\u0501iffi\u0441ult") == ["[UNK]"] and len(tok.tokenize("go od")) > 1
    victim = Victim(model, tok, "sst2")
    texts = ["a go od film", "a \u0261\u0501\u051b film", "a GOoD film"]
    enc = tok(texts, padding=True, return_tensors="pt")
    expected = model(**enc).logits.softmax(-1).detach().numpy()
    got = victim.probs([load_examples("sst2", "dev", n=1)[0].with_field("text_a", t) for t in texts])
    assert got == pytest.approx(expected, abs=1e-5)
    keyword = KeywordModel(tok)
    attack = build_attack(name, Victim(keyword, tok, "sst2"), overrides={"similarity": None})
    records = [attack.run(e, i, 0) for i, e in enumerate(GOOD)]
    assert any(r.result == SUCCEEDED for r in records)
    fresh = Victim(keyword, tok, "sst2")
    for r in records:
        assert_only_reported_positions_differ(r)
        if r.result != SKIPPED:
            assert int(fresh.predict([GOOD[r.index].with_field("text_a", r.adversarial)])[0]) == r.adversarial_pred


def character_edit(original: str, new: str) -> bool:
    """A TextBugger/DeepWordBug bug rather than a dictionary word: a space, a look-alike, or one or two edits."""
    return " " in new or any(c in HOMOGLYPHS.values() for c in new) or levenshtein(original, new) <= 2


def test_textbugger_split_spaces_moves_the_search_past_the_word_it_meant(tok_model):
    """inserted_space=split (TextAttack's way). "the film is good and the acting is great .": the keyword victim needs
    "good" (3) and "great" (8) broken; equal importance, so "good" goes first, and its first bug (all score alike) is
    the inserted space. One word position: position 8 is still "great", the attack succeeds. Split: position 8 is now
    "is" (a stopword) and "great" sits at 9, which the order (ranked on the 9 original words) never visits: it fails,
    as TextAttack's does. Either way the records name original words and replaying them gives the adversarial text."""
    _, tok = tok_model
    keyword = KeywordModel(tok)
    records = {}
    for mode in ("split", "one-word"):
        overrides = {"similarity": None, "inserted_space": mode}
        attack = build_attack("textbugger", Victim(keyword, tok, "sst2"), overrides=overrides)
        assert attack.config()["settings"]["inserted_space"] == mode
        records[mode] = [attack.run(e, i, 0) for i, e in enumerate(GOOD)]
        for r in records[mode]:
            assert_only_reported_positions_differ(r)
    whole, split = records["one-word"][0], records["split"][0]
    assert whole.result == SUCCEEDED and [s["index"] for s in whole.swaps] == [3, 8]
    assert " " in whole.swaps[0]["new"] and whole.swaps[0]["new"] == split.swaps[0]["new"]  # the same seeded bug
    assert split.result != SUCCEEDED and [s["index"] for s in split.swaps] == [3]


@pytest.mark.parametrize(
    "name, key, value, message",
    [
        ("textbugger", "inserted_space", "two-words", "recipe_args.inserted_space: expected one of one-word, split"),
        ("textbugger", "bugs", ["typo"], "recipe_args.bugs"),
        ("deepwordbug", "letters", "digits", "recipe_args.letters"),
    ],
)
def test_bad_character_settings_stop_when_the_config_is_checked(name, key, value, message):
    from robustft.attacks.recipes import recipe_config
    from robustft.errors import ConfigError

    with pytest.raises(ConfigError, match=message):
        recipe_config(name, None, {key: value})


@pytest.mark.parametrize("name", ["textbugger", "deepwordbug"])
def test_cli_attack_records_show_character_edits(name, tiny_model_dir, tmp_path, capsys):
    from robustft.cli import main

    out = tmp_path / "run"
    args = ["attack", "--model", tiny_model_dir, "--task", "sst2", "--split", "dev", "--recipe", name, "-n", "6"]
    args += ["--output_dir", str(out), "--progress", "false", "--query_budget", "60", "--threads", "1"]
    assert main([*args, "--recipe_args.similarity", "null"] if name == "textbugger" else args) == 0
    assert "Attack success rate" in capsys.readouterr().out
    config = json.loads((out / "config.json").read_text())
    assert config["attack"]["recipe"] == name
    records = [json.loads(line) for line in (out / "examples.jsonl").read_text().splitlines()]
    swaps = [s for r in records for s in r["swaps"]]
    assert swaps and any(character_edit(s["original"], s["new"]) for s in swaps)
    if name == "deepwordbug":
        assert all(levenshtein(s["original"], s["new"]) <= 2 for s in swaps)
        assert all(levenshtein(r["original"], r["adversarial"]) <= 30 for r in records)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["textbugger", "deepwordbug"])
def test_character_attacks_on_the_real_minilm_backbone(name):
    from robustft.models.factory import load_classifier

    model, tok = load_classifier("minilm", ("negative", "positive"))
    examples = load_examples("sst2", "dev", n=3, seed=0)
    attack = build_attack(name, Victim(model, tok, "sst2"), overrides={"query_budget": 80})
    records = [attack.run(e, i, 0) for i, e in enumerate(examples)]
    fresh = Victim(model, tok, "sst2")
    for r in records:
        assert_only_reported_positions_differ(r)
        assert r.queries <= 80
        assert int(fresh.predict([examples[r.index].with_field("text_a", r.adversarial)])[0]) == r.adversarial_pred
    assert any(character_edit(s["original"], s["new"]) for r in records for s in r.swaps)
