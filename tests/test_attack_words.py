from robustft.attacks.words import AttackedText, is_one_word, match_case, split_words


def test_words_and_spans_keep_punctuation_and_contractions():
    words, spans = split_words("It's a well-made film, isn't it? ")
    assert words == ("It's", "a", "well-made", "film", "isn't", "it")
    assert [("It's a well-made film, isn't it? ")[s:e] for s, e in spans] == list(words)


def test_replace_keeps_everything_but_the_word_and_matches_case():
    t = AttackedText("Great movie , GREAT acting .")
    adv = t.replace_words({0: "superb", 2: "superb"})
    assert adv.text == "Superb movie , SUPERB acting ."
    assert adv.modified == {0, 2}
    assert adv.swaps() == [
        {"index": 0, "original": "Great", "new": "Superb"},
        {"index": 2, "original": "GREAT", "new": "SUPERB"},
    ]


def test_swapping_back_clears_the_position():
    t = AttackedText("a good film").replace_word(1, "fine")
    assert t.modified == {1}
    back = t.replace_word(1, "good")
    assert back.text == "a good film" and back.modified == frozenset()


def test_non_ascii_words_and_multiword_substitutes():
    t = AttackedText("Amélie est très drôle")
    assert t.words == ("Amélie", "est", "très", "drôle")
    assert t.replace_word(3, "marrante").text == "Amélie est très marrante"
    assert not is_one_word("ice cream") and not is_one_word("ice_cream") and is_one_word("café")


def test_delete_put_token_and_window():
    t = AttackedText("one two three four five")
    assert t.delete_word(2) == "one two four five"
    assert t.delete_word(4) == "one two three four"
    assert t.put_token(0, "[UNK]") == "[UNK] two three four five"
    assert t.window(0, 3) == (0, 3) and t.window(4, 3) == (2, 5) and t.window(2, 15) == (0, 5)
    assert t.text_window(1, 3) == "two three"


def test_empty_text_has_no_words():
    t = AttackedText("  ... ")
    assert t.num_words == 0 and t.swaps() == []
    assert match_case("", "x") == "x"
