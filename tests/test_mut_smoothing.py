"""Oracle tests for `robustft.adversary.smoothing` (mutation testing, docs/testing.md): SAFER's q against the exact
total variation of two uniform distributions, the perturbation table written out by hand for a small neighbour
dict, word structure counted by hand, DNE's weights against the Dirichlet mean and its mixed embeddings against a
loop over the table's rows."""

import itertools
import random
from fractions import Fraction

import pytest
import torch

from robustft.adversary import smoothing
from robustft.data.batching import collate, encode
from robustft.data.example import Example
from robustft.data.tasks import get_task
from robustft.models.factory import tiny_bert

SST2, SNLI = get_task("sst2"), get_task("snli")


@pytest.fixture(scope="module")
def tiny():
    return tiny_bert(2, seed=0)


def overlap_by_total_variation(v, sets) -> Fraction:
    """min over u in S_v of 1 - TV(uniform on S_v, uniform on S_u), summed over every element."""
    own = sets.get(v, {v})
    worst = Fraction(1)
    for u in own:
        other = sets.get(u, {u})
        tv = sum(abs(Fraction(x in own, len(own)) - Fraction(x in other, len(other))) for x in own | other) / 2
        worst = min(worst, 1 - tv)
    return worst


def test_set_overlap_is_one_minus_the_total_variation_of_the_uniform_distributions():
    rng = random.Random(0)
    for _ in range(200):
        sets = {}
        for v in range(6):
            if rng.random() < 0.7:
                sets[v] = {v, *rng.sample(range(8), rng.randint(0, 4))}
        for v in range(8):
            assert smoothing.set_overlap(v, sets) == pytest.approx(float(overlap_by_total_variation(v, sets)))


def test_set_overlap_by_hand():
    sets = {0: {0, 1}, 1: {1, 0, 2, 3, 4}}
    assert smoothing.set_overlap(0, sets) == 2 / 5  # u = 1: 2 shared of its 5
    assert smoothing.set_overlap(1, sets) == 1 / 5  # u = 2: {2} shares 1 of 1's 5
    assert smoothing.set_overlap(7, sets) == 1.0  # no set: {7} against itself


def test_surface_splits_the_word_start_marker():
    assert smoothing._surface("Ġgood") == ("Ġ", "good")
    assert smoothing._surface("▁good") == ("▁", "good")
    assert smoothing._surface("good") == ("", "good")
    assert smoothing._surface("##ness") == ("", "##ness")


def test_continuation_ids_are_the_wordpiece_pieces_and_never_special_tokens(tiny):
    _, tok = tiny
    flags = smoothing.continuation_ids(tok)
    tokens = tok.convert_ids_to_tokens(list(range(len(tok))))
    special = set(tok.all_special_tokens)
    assert flags.dtype == torch.bool and len(flags) == len(tok)
    assert flags.tolist() == [t.startswith("##") and t not in special for t in tokens]


class MarkerTokenizer:
    """A byte-level-BPE-like vocabulary: word starts carry 'Ġ', continuations do not; one special token."""

    tokens = ["<s>", "Ġgood", "Ġgreat", "ness", "good", "Ġfine", "Ġ", ""]
    all_special_tokens = ["<s>"]

    def __len__(self):
        return len(self.tokens)

    def convert_ids_to_tokens(self, ids):
        return [self.tokens[i] for i in ids]


def test_continuation_ids_without_wordpiece_are_the_tokens_without_a_word_start_mark():
    # "<s>" special, "" empty: False; "ness" and "good" continue a word; "Ġ" alone starts one
    assert smoothing.continuation_ids(MarkerTokenizer()).tolist() == [
        False,
        False,
        False,
        True,
        True,
        False,
        False,
        False,
    ]


NEIGHBORS = {  # "bad" has neighbours none of which is one token; "good" lists itself and a duplicate
    "good": ["good", "great", "fine", "great", "gorgeousness", "nice"],
    "great": ["good", "terrific"],
    "fine": ["good"],
    "bad": ["gorgeousness"],
    "film": ["movie"],
}


def test_the_table_by_hand(tiny):
    _, tok = tiny
    ids = tok.convert_tokens_to_ids
    good, great, fine, nice, terrific, film, movie = map(
        ids, ["good", "great", "fine", "nice", "terrific", "film", "movie"]
    )
    table = smoothing.build_table(tok, NEIGHBORS, width=4, second_order=False)
    assert table.ids.shape == (len(tok), 4) and table.width == 4
    assert table.ids[good].tolist() == [good, great, fine, nice]
    assert table.ids[great].tolist() == [great, good, terrific, great]  # padded with itself
    assert (table.size[good], table.first[good], table.size[great], table.first[great]) == (4, 4, 3, 3)
    assert table.ids[film].tolist() == [film, movie, film, film]
    bad = ids("bad")
    assert table.ids[bad].tolist() == [bad] * 4 and table.size[bad] == 1 and table.first[bad] == 1
    assert table.overlap[bad] == 1.0 and table.overlap[nice] == 1.0
    # q by hand: S_good {good, great, fine, nice}, S_great {great, good, terrific}, S_fine {fine, good}
    assert table.overlap[good] == pytest.approx(1 / 4)  # u = nice: {nice} shares 1 of 4
    assert table.overlap[great] == pytest.approx(1 / 3)  # u = terrific: {terrific}
    assert table.overlap[fine] == pytest.approx(2 / 4)  # u = good: 2 shared of good's 4
    assert table.continuation.tolist() == smoothing.continuation_ids(tok).tolist()


def test_second_order_rows_append_the_neighbours_neighbours_up_to_the_width(tiny):
    _, tok = tiny
    ids = tok.convert_tokens_to_ids
    good, great, fine, nice, terrific = map(ids, ["good", "great", "fine", "nice", "terrific"])
    table = smoothing.build_table(tok, NEIGHBORS, width=6, second_order=True)
    # fine: {fine, good}, then good's neighbours great, nice (fine and good already there)
    assert table.ids[fine].tolist()[:4] == [fine, good, great, nice] and table.size[fine] == 4
    assert table.first[fine] == 2
    assert table.ids[great].tolist()[:5] == [great, good, terrific, fine, nice] and table.size[great] == 5
    narrow = smoothing.build_table(tok, NEIGHBORS, width=3, second_order=True)
    assert narrow.ids[fine].tolist() == [fine, good, great] and narrow.size[fine] == 3
    assert narrow.first[good] == 3 and narrow.ids[good].tolist() == [good, great, fine]


def test_a_capitalised_vocabulary_word_gets_capitalised_neighbours():
    class Cased(MarkerTokenizer):
        tokens = ["<s>", "Ġgood", "ĠGood", "ĠGreat", "Ġgreat", "Ġ2"]
        all_special_ids = [0]

        def get_vocab(self):
            return {t: i for i, t in enumerate(self.tokens)}

    table = smoothing.build_table(Cased(), {"good": ["great"], "2": ["two"]}, width=2, second_order=False)
    assert table.ids[2].tolist() == [2, 3] and table.ids[1].tolist() == [1, 4]  # Good -> Great, good -> great
    assert table.size[5] == 1  # "2" is not a word


def test_neighbour_table_is_built_once_per_tokenizer_and_shape(tiny):
    _, tok = tiny
    a = smoothing.neighbour_table(tok, width=9)
    assert smoothing.neighbour_table(tok, width=9) is a
    assert smoothing.neighbour_table(tok, width=5).width == 5
    assert smoothing.neighbour_table(tok, width=9, second_order=True) is not a
    given = smoothing.neighbour_table(tok, width=3, neighbors={"good": ["great"]})
    assert given.size[tok.convert_tokens_to_ids("good")] == 2 and given.width == 3


def test_words_of_a_pairs_hypothesis_by_hand(tiny):
    _, tok = tiny
    batch = collate(encode(tok, [Example("a premise", 0, "gorgeousness , good")], 32), tok.pad_token_id)
    table = smoothing.neighbour_table(tok)
    words = smoothing.batch_words(batch["input_ids"], batch["attention_mask"], table.continuation, tok, SNLI)
    # [CLS] a premise [SEP] gorgeous ##ness , good [SEP]: three words, "gorgeous ##ness" one of two pieces
    assert tok.convert_ids_to_tokens(batch["input_ids"][0]) == [
        "[CLS]",
        "a",
        "premise",
        "[SEP]",
        "gorgeous",
        "##ness",
        ",",
        "good",
        "[SEP]",
    ]
    assert words.word_of.tolist() == [[-1, -1, -1, -1, 0, 0, 1, 2, -1]]
    assert words.count.tolist() == [3]
    assert words.whole.tolist() == [[False, False, False, False, False, False, True, True, False]]


def test_words_of_single_texts_with_padding_and_unknown_tokens(tiny):
    _, tok = tiny
    batch = collate(encode(tok, [Example("good \u2603", 0), Example("the good film", 0)], 32), tok.pad_token_id)
    table = smoothing.neighbour_table(tok)
    words = smoothing.batch_words(batch["input_ids"], batch["attention_mask"], table.continuation, tok, SST2)
    assert words.word_of.tolist() == [[-1, 0, 1, -1, -1], [-1, 0, 1, 2, -1]]  # [UNK] is a word
    assert words.count.tolist() == [2, 3]
    assert words.whole.tolist() == [[False, True, True, False, False], [False, True, True, True, False]]


def test_masked_count_rounds_half_to_even_and_keeps_min_keep():
    count = torch.tensor([0, 1, 2, 3, 5, 7, 10])
    assert smoothing.masked_count(count, 0.5, 1).tolist() == [0, 0, 1, 2, 2, 4, 5]  # round(2.5) = 2, round(1.5) = 2
    assert smoothing.masked_count(count, 0.9, 2).tolist() == [0, 0, 0, 1, 3, 5, 8]
    assert smoothing.masked_count(count, 0.5, 1).dtype == torch.long


def test_substitute_picks_the_member_the_uniform_falls_on(tiny):
    _, tok = tiny
    table = smoothing.build_table(tok, NEIGHBORS, width=4, second_order=False)
    good = tok.convert_tokens_to_ids("good")
    ids = torch.tensor([[good, good, good, good]])
    words = smoothing.Words(torch.tensor([[0, 1, 2, 3]]), torch.tensor([4]), torch.tensor([[True, True, True, False]]))
    got = smoothing.substitute(ids, words, table, torch.tensor([[0.0, 0.49, 0.9999, 0.9]]))
    assert got.tolist() == [[good, table.ids[good, 1].item(), table.ids[good, 3].item(), good]]


def test_dirichlet_weights_average_to_the_dirichlet_mean(tiny):
    _, tok = tiny
    table = smoothing.build_table(tok, NEIGHBORS, width=6, second_order=True)
    fine, film = tok.convert_tokens_to_ids(["fine", "film"])
    ids = torch.tensor([[fine, film]]).expand(4000, -1)
    words = smoothing.Words(
        torch.zeros(4000, 2, dtype=torch.long), torch.ones(4000), torch.tensor([[True, False]]).expand(4000, -1)
    )
    w = smoothing.dirichlet_weights(ids, words, table, 1.0, 0.5, torch.Generator().manual_seed(0))
    # fine: 2 first-order slots at alpha 1, 2 second-order at 0.5, 2 padded: mean alpha_i / 3
    assert torch.allclose(w[:, 0].mean(0), torch.tensor([1 / 3, 1 / 3, 1 / 6, 1 / 6, 0, 0]), atol=0.015)
    assert (w[:, 0, 4:] == 0).all() and torch.allclose(w.sum(-1), torch.ones(4000, 2))
    assert (w[:, 1] == torch.tensor([1.0, 0, 0, 0, 0, 0])).all()  # not a whole word: itself only


def test_mix_rows_is_the_weighted_sum_of_the_table_rows_embeddings(tiny):
    model, tok = tiny
    table = smoothing.build_table(tok, NEIGHBORS, width=4, second_order=False)
    ids = torch.tensor([tok.convert_tokens_to_ids(["good", "great", "film"])])
    weights = torch.rand(1, 3, 4, generator=torch.Generator().manual_seed(1))
    got = smoothing.mix_rows(model, ids, table, weights)
    emb = model.get_input_embeddings().weight
    for p, t in enumerate(ids[0].tolist()):
        expected = sum(float(weights[0, p, m]) * emb[table.ids[t, m]] for m in range(4))
        assert torch.allclose(got[0, p], expected, atol=1e-6)


def test_mask_words_repacks_rows_with_token_types_by_hand(tiny):
    _, tok = tiny
    batch = collate(encode(tok, [Example("a premise", 0, "gorgeousness , good")], 32), tok.pad_token_id)
    table = smoothing.neighbour_table(tok)
    words = smoothing.batch_words(batch["input_ids"], batch["attention_mask"], table.continuation, tok, SNLI)
    for hidden in itertools.combinations(range(3), 2):
        keys = torch.tensor([[0.0 if w in hidden else 1.0 for w in range(3)]])
        out = smoothing.mask_words(
            batch["input_ids"], batch["attention_mask"], words, torch.tensor([2]), keys, 7, 0, batch["token_type_ids"]
        )
        pieces = {0: ["gorgeous", "##ness"], 1: [","], 2: ["good"]}
        hyp = [t for w in range(3) for t in (["M"] if w in hidden else pieces[w])]
        expected = ["[CLS]", "a", "premise", "[SEP]", *hyp, "[SEP]"]
        got = [("M" if i == 7 else tok.convert_ids_to_tokens(i)) for i in out["input_ids"][0].tolist()]
        assert got == expected and out["attention_mask"].tolist() == [[1] * len(expected)]
        assert out["token_type_ids"].tolist() == [[0] * 4 + [1] * (len(expected) - 4)]
