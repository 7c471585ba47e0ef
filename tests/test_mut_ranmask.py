"""Oracle tests for `robustft.defenses.ranmask` (mutation testing, docs/testing.md): Delta_d by counting every
choice of kept words, the radius by a plain search over that count, masked copies built by hand from the keys, and
the certified figures hand-computed."""

import itertools

import pytest
import torch

from robustft.data.batching import collate, encode
from robustft.data.example import Example
from robustft.data.tasks import get_task
from robustft.defenses import ranmask
from robustft.defenses.registry import defense_for
from robustft.defenses.settings import EnsembleSettings
from robustft.errors import ConfigError
from robustft.models.factory import tiny_bert

SST2 = get_task("sst2")


@pytest.fixture(scope="module")
def tok():
    return tiny_bert(2, seed=0)[1]


def brute_delta(h: int, kept: int, d: int) -> float:
    """The share of the C(h, kept) choices of unmasked words that keep one of the d changed words (words 0..d-1)."""
    choices = list(itertools.combinations(range(h), kept))
    return sum(any(w < d for w in c) for c in choices) / len(choices)


def test_masking_delta_is_the_share_of_copies_that_keep_a_changed_word():
    for h in range(1, 8):
        for kept in range(h + 1):
            for d in range(h + 1):
                assert ranmask.masking_delta(h, kept, d) == pytest.approx(brute_delta(h, kept, d)), (h, kept, d)
    assert ranmask.masking_delta(3, 1, 4) == 1.0  # more changed words than words: nothing certified


def test_radius_is_the_largest_d_the_brute_force_delta_certifies():
    for h, kept in [(1, 1), (4, 1), (6, 2), (10, 1), (10, 3)]:
        for p in [0.3, 0.5, 0.5001, 0.6, 0.75, 0.8, 0.9, 0.95, 0.99, 1.0]:
            certified = [d for d in range(h + 1) if p - brute_delta(h, kept, d) > 0.5]
            assert ranmask.radius(p, h, kept) == (max(certified) if certified else -1), (h, kept, p)


def test_radius_at_the_exact_boundary_is_not_certified():
    # h = 4, kept = 2: Delta_1 = 1 - C(3,2)/C(4,2) = 1/2, so p = 1 is at the boundary of d = 1 exactly
    assert ranmask.radius(1.0, 4, 2) == 0
    assert ranmask.radius(0.75, 4, 1) == 0  # Delta_1 = 1/4: 0.75 - 0.25 = 0.5 exactly
    assert ranmask.radius(0.76, 4, 1) == 1


def test_a_tokenizer_without_a_mask_token_is_refused():
    no_mask = type("Tokenizer", (), {"mask_token_id": None})()
    with pytest.raises(ConfigError, match="^RanMASK needs a tokenizer with a mask token$"):
        ranmask.RanMASK(EnsembleSettings("ranmask"), no_mask, SST2)


@pytest.mark.parametrize(
    ("text", "rate", "min_keep", "words", "kept"),
    [
        ("a good film with a great cast", 0.9, 2, 7, 2),  # round(6.3) = 6 masked, but 2 kept: 5 masked
        ("a good film with a great cast", 0.5, 2, 7, 3),  # round(3.5) = 4 (half to even)
        ("a good film with a great cast", 0.3, 2, 7, 5),  # round(2.1) = 2
        ("one two three four five", 0.5, 1, 5, 3),  # round(2.5) = 2 (half to even)
        ("good", 0.9, 2, 1, 1),  # fewer words than min_keep: nothing masked
    ],
)
def test_certificate_counts_words_and_kept_words_by_hand(tok, text, rate, min_keep, words, kept):
    d = defense_for(EnsembleSettings("ranmask", rate=rate, min_keep=min_keep), tok, SST2)
    out = d.certificate(0.97, tok(text)["input_ids"])
    expected = max([r for r in range(words + 1) if 0.97 - brute_delta(words, kept, r) > 0.5], default=-1)
    assert out == {"words": words, "kept": kept, "radius": expected}


def test_certified_accuracy_by_hand():
    figure = lambda flags: sum(flags)  # noqa: E731  (the count of certified examples stands in for the figure)
    certs = [{"radius": r} for r in (-1, 0, 1, 3, 5, 12)]
    out = ranmask.RanMASK.certified_accuracy(certs, figure)
    assert out["accuracy_by_changed_words"] == {"1": 4, "2": 3, "3": 3, "4": 2, "5": 2, "10": 1}
    assert out["mean_radius"] == pytest.approx((0 + 0 + 1 + 3 + 5 + 12) / 6)


def by_hand(ids: list[int], word_of: list[int], hidden: set[int], mask_id: int) -> list[int]:
    """The masked copy: each hidden word one mask token, every other token kept in order."""
    out, last = [], None
    for t, w in zip(ids, word_of, strict=True):
        if w >= 0 and w in hidden:
            out += [] if w == last else [mask_id]
        else:
            out.append(t)
        last = w
    return out


TEXTS = ["a gorgeousness film with a great cast", "terrible , boring film", "the unbelievable plot"]


def test_copies_mask_each_rows_words_of_the_smallest_keys_its_own_generator_draws(tok):
    d = defense_for(EnsembleSettings("ranmask", copies=3, rate=0.5), tok, SST2)
    batch = collate(encode(tok, [Example(t, 0) for t in TEXTS], 32), tok.pad_token_id)
    ids, mask = batch["input_ids"], batch["attention_mask"]
    words = d.words(ids, mask)
    out = d.copies(ids, mask, batch["token_type_ids"], words, [torch.Generator().manual_seed(s) for s in (4, 5, 6)])
    assert out["input_ids"].shape[0] == 9 and out["token_type_ids"].shape == out["input_ids"].shape
    for r, seed in enumerate((4, 5, 6)):
        h = int(words.count[r])
        keys = torch.rand(3, h, generator=torch.Generator().manual_seed(seed))
        masked = min(round(h * 0.5), h - 2)
        real = mask[r].bool()
        for i in range(3):
            hidden = set(sorted(range(h), key=lambda w: float(keys[i, w]))[:masked])
            row = out["input_ids"][3 * r + i][out["attention_mask"][3 * r + i].bool()].tolist()
            assert row == by_hand(ids[r][real].tolist(), words.word_of[r][real].tolist(), hidden, tok.mask_token_id)


def test_a_training_copy_masks_the_hand_counted_words_of_each_row(tok):
    d = defense_for(EnsembleSettings("ranmask"), tok, SST2)
    batch = collate(encode(tok, [Example(t, 0) for t in TEXTS], 32), tok.pad_token_id)
    torch.manual_seed(0)
    out = d.training_copy(batch)
    # words: 7 ("gorgeousness" two pieces), 4 ("," a word), 3; masked min(round(0.9 h), h - 2) = 5, 2, 1
    masks = (out["input_ids"] == tok.mask_token_id).sum(1).tolist()
    assert masks == [5, 2, 1]
    lengths = out["attention_mask"].sum(1).tolist()
    assert lengths[1:] == [2 + 4, 2 + 3]  # [CLS], [SEP] and one token per word (a masked word is one mask)
    assert lengths[0] in (2 + 7, 2 + 8)  # "gorgeousness" (two pieces) is one mask if masked


@pytest.mark.parametrize(("pad_id", "padding"), [(7, 7), (None, 0)])
def test_rows_are_padded_with_the_tokenizers_pad_id_or_0_without_one(tok, pad_id, padding):
    d = defense_for(EnsembleSettings("ranmask", rate=0.5), tok, SST2)
    batch = collate(encode(tok, [Example(t, 0) for t in TEXTS], 32), tok.pad_token_id)
    ids, mask = batch["input_ids"], batch["attention_mask"]
    words = d.words(ids, mask)  # with the real tokenizer; only the masking reads the stand-in's ids
    d.tokenizer = type("Tokenizer", (), {"mask_token_id": 3, "pad_token_id": pad_id})()
    out = d.mask(ids, mask, None, words, torch.rand(3, int(words.count.max()), generator=torch.Generator()))
    assert (out["input_ids"][~out["attention_mask"].bool()] == padding).all()
    assert (out["input_ids"] == 3).sum(1).tolist() == [min(round(h * 0.5), h - 2) for h in words.count.tolist()]
