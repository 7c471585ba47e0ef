"""Oracle tests for `robustft.defenses.safer` (mutation testing, docs/testing.md): a neighbour dict whose overlaps
are exact binary fractions (so Delta and the strict boundary p - Delta > 0.5 are exact), copies rebuilt by hand
from the sets as the dict lists them and the uniform draws of each row's own generator."""

import pytest
import torch

from robustft.data.batching import collate, encode
from robustft.data.example import Example
from robustft.data.tasks import get_task
from robustft.defenses import safer
from robustft.defenses.registry import defense_for
from robustft.defenses.settings import EnsembleSettings
from robustft.models.factory import tiny_bert

SST2, SNLI = get_task("sst2"), get_task("snli")
# S_good = {good, great, fine, nice}; S_great = {great, good, fine, bad} shares 3 of 4 with it, S_fine and S_nice
# share all 4: q_good = 3/4 by hand (S_bad = {bad}: q_bad = 1; q_great = min(3/4, 1/4 (bad)) = 1/4)
NEIGHBORS = {
    "good": ["great", "fine", "nice"],
    "great": ["good", "fine", "bad"],
    "fine": ["good", "great", "nice"],
    "nice": ["good", "great", "fine"],
}


@pytest.fixture(scope="module")
def tok():
    return tiny_bert(2, seed=0)[1]


@pytest.fixture(scope="module")
def defense(tok):
    return defense_for(EnsembleSettings("safer", copies=4), tok, SST2, NEIGHBORS)


def test_delta_counts_words_and_multiplies_the_hand_computed_overlaps(tok, defense):
    assert defense.delta(tok("good")["input_ids"]) == (1, 0.25)
    assert defense.delta(tok("a good film , good")["input_ids"]) == (5, 1 - 0.75 * 0.75)
    assert defense.delta(tok("great")["input_ids"]) == (1, 0.75)
    # "gorgeousness" is two pieces: a word that never moves (q = 1), counted among the words
    assert defense.delta(tok("gorgeousness good")["input_ids"]) == (2, 0.25)


def test_certified_only_strictly_above_one_half_plus_delta(tok, defense):
    ids = tok("good")["input_ids"]
    assert defense.certificate(0.75, ids) == {"words": 1, "delta": 0.25, "certified": False}  # 0.75 - 0.25 = 0.5
    assert defense.certificate(0.7500001, ids)["certified"] is True
    assert defense.certificate(0.3, tok("film")["input_ids"]) == {"words": 1, "delta": 0.0, "certified": False}
    assert defense.certificate(0.51, tok("film")["input_ids"])["certified"] is True


def test_certified_accuracy_is_the_figure_of_the_certified_flags():
    certs = [{"certified": c} for c in (True, False, True)]
    assert safer.SAFER.certified_accuracy(certs, lambda flags: list(flags)) == {"accuracy": [True, False, True]}


def sets_by_hand(tok) -> dict[int, list[int]]:
    """Each word's first-order set as token ids, in the dict's order (the word first)."""
    ids = tok.convert_tokens_to_ids
    return {ids(w): [ids(w), *map(ids, n)] for w, n in NEIGHBORS.items()}


def test_copies_draw_each_whole_word_from_its_set_by_its_rows_own_uniforms(tok, defense):
    texts, pairs = ["good nice film", "great , fine gorgeousness"], ["a premise", "the premise is long here"]
    examples = [Example(p, 0, t) for t, p in zip(texts, pairs, strict=True)]
    batch = collate(encode(tok, examples, 32), tok.pad_token_id)
    snli = defense_for(EnsembleSettings("safer", copies=4), tok, SNLI, NEIGHBORS)
    ids, mask, types = batch["input_ids"], batch["attention_mask"], batch["token_type_ids"]
    words = snli.words(ids, mask)
    out = snli.copies(ids, mask, types, words, [torch.Generator().manual_seed(s) for s in (11, 12)])
    assert set(out) == {"input_ids", "attention_mask", "token_type_ids"}
    assert out["attention_mask"].tolist() == mask.repeat_interleave(4, 0).tolist()
    assert out["token_type_ids"].tolist() == types.repeat_interleave(4, 0).tolist()
    sets = sets_by_hand(tok)
    for r, seed in enumerate((11, 12)):
        real = mask[r].bool()
        uniform = torch.rand(4, int(real.sum()), generator=torch.Generator().manual_seed(seed))
        hypothesis = types[r][real].tolist()
        for i in range(4):
            expected = []
            for p, t in enumerate(ids[r][real].tolist()):
                movable = hypothesis[p] == 1 and t in sets  # only the hypothesis moves; sets hold whole words
                expected.append(sets[t][int(float(uniform[i, p]) * len(sets[t]))] if movable else t)
            assert out["input_ids"][4 * r + i][real].tolist() == expected
            assert (out["input_ids"][4 * r + i][~real] == tok.pad_token_id).all()


def test_copies_without_token_types_give_none(tok, defense):
    batch = collate(encode(tok, [Example("good film", 0)], 32), tok.pad_token_id)
    ids, mask = batch["input_ids"], batch["attention_mask"]
    out = defense.copies(ids, mask, None, defense.words(ids, mask), [torch.Generator().manual_seed(0)])
    assert set(out) == {"input_ids", "attention_mask"} and out["input_ids"].shape == (4, ids.shape[1])


def test_a_training_copy_replaces_only_whole_words_within_their_sets(tok, defense):
    batch = collate(encode(tok, [Example("good nice gorgeousness film", 0)] * 50, 32), tok.pad_token_id)
    torch.manual_seed(0)
    out = defense.training_copy(batch)
    assert set(out) == {"input_ids"}
    sets = sets_by_hand(tok)
    ids = batch["input_ids"]
    seen = set()
    for row in out["input_ids"]:
        for p, (t, u) in enumerate(zip(ids[0].tolist(), row.tolist(), strict=True)):
            assert u in sets.get(t, [t]), p
            seen.add((p, u))
    # 50 draws of uniform choices from sets of 4: every member of "good"'s and "nice"'s sets shows up
    assert {u for p, u in seen if p == 1} == set(sets[ids[0, 1].item()])
    assert {u for p, u in seen if p == 2} == set(sets[ids[0, 2].item()])


def test_delta_is_recorded_to_six_decimals(tok, defense):
    # four words of q = 3/4: Delta = 1 - 81/256 = 0.68359375, written 0.683594
    assert defense.certificate(0.9, tok("good good good good")["input_ids"])["delta"] == 0.683594
