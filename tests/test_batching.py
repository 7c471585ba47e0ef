"""The epoch's batch order: a pure function of (seed, epoch) that covers the data, groups similar lengths (which
is where most of the training time on short texts goes), and keeps RIFT's batches exactly class-balanced."""

import random
from collections import Counter

import torch

from robustft.data.batching import (
    Encoded,
    epoch_batches,
    pad_tokenized,
    padded_cost_batches,
    tokenize_pad,
    tokenize_rows,
)
from robustft.data.example import Example
from robustft.models.factory import tiny_bert


def items(n=400, labels=2, seed=0):
    rng = random.Random(seed)
    return [Encoded(Example(f"t{i}", i % labels), [1] * rng.randint(3, 60), None) for i in range(n)]


def mean_padded_length(data, batches):
    return sum(len(b) * max(len(data[i].input_ids) for i in b) for b in batches) / sum(map(len, batches))


def test_batches_cover_each_example_once_and_depend_only_on_seed_and_epoch():
    data = items()
    batches = epoch_batches(data, 32, seed=3, epoch=1)
    assert sorted(i for b in batches for i in b) == list(range(len(data)))
    assert batches == epoch_batches(data, 32, seed=3, epoch=1)
    assert batches != epoch_batches(data, 32, seed=3, epoch=2)


def test_class_balanced_batches_are_balanced_grouped_by_length_and_seeded():
    data = items(n=300, labels=3)
    grouped = epoch_batches(data, 30, seed=0, epoch=0, class_balanced=True)
    plain = epoch_batches(data, 30, seed=0, epoch=0, group_by_length=False, class_balanced=True)
    for batches in (grouped, plain):
        assert all(Counter(data[i].example.label for i in b) == {0: 10, 1: 10, 2: 10} for b in batches)
        assert sorted(i for b in batches for i in b) == list(range(len(data)))  # equal classes: each once
    assert grouped == epoch_batches(data, 30, seed=0, epoch=0, class_balanced=True)
    # Lengths uniform in 3..60: random batches pad to about 59; a batch of the j-th tenth of every class pads to
    # the top of that tenth, as a plain sort of all examples would (about 36).
    by_length = sorted(range(len(data)), key=lambda i: len(data[i].input_ids))
    best = mean_padded_length(data, [by_length[i : i + 30] for i in range(0, len(data), 30)])
    assert mean_padded_length(data, grouped) < 1.1 * best < 0.7 * mean_padded_length(data, plain)


def test_class_balanced_batches_cycle_the_smaller_class():
    data = [Encoded(Example(f"t{i}", int(i < 10)), [1] * (3 + i % 7), None) for i in range(50)]  # 40 vs 10
    batches = epoch_batches(data, 8, seed=1, epoch=0, class_balanced=True)
    assert len(batches) == 10  # the larger class (40) is used up at 4 per batch
    assert all(Counter(data[i].example.label for i in b) == {0: 4, 1: 4} for b in batches)
    assert {i for b in batches for i in b} == set(range(50))


def test_padded_cost_batches_split_rows_of_very_different_lengths_only_when_a_call_costs_less_than_their_padding():
    lengths = [50, 10, 10, 50, 10, 10]
    assert padded_cost_batches(lengths, 64, float("inf")) == [[1, 2, 4, 5, 0, 3]]  # sorted, one chunk
    split = padded_cost_batches(lengths, 64, 20)  # one call: 20 + 6 * 50 = 320 token-rows; two: 40 + 40 + 100
    assert split == [[1, 2, 4, 5], [0, 3]]
    assert padded_cost_batches(lengths, 64, 1000) == [[1, 2, 4, 5, 0, 3]]  # a call costs more than the padding
    assert padded_cost_batches(lengths, 3, 1000) == [[1, 2, 4], [5, 0, 3]]  # never more than batch_size rows
    rng = random.Random(0)
    many = [rng.randint(3, 60) for _ in range(300)]
    batches = padded_cost_batches(many, 32, 64)
    assert sorted(i for b in batches for i in b) == list(range(300)) and max(map(len, batches)) <= 32
    padded = sum(len(b) * max(many[i] for i in b) for b in batches) + 64 * len(batches)
    plain = padded_cost_batches(many, 32, float("inf"))
    assert padded <= sum(len(b) * max(many[i] for i in b) for b in plain) + 64 * len(plain)


def test_rows_tokenised_first_and_padded_later_are_the_tensors_of_tokenise_and_pad():
    tok = tiny_bert(num_labels=2, seed=0)[1]
    a, b = ["a good film", "bad", "the acting is great , the plot is not"], ["yes", "no , never", "maybe"]
    for second, to_max in ((None, False), (b, False), (b, True)):
        direct = tokenize_pad(tok, a, second, max_length=8, pad_to_max_length=to_max)
        later = pad_tokenized(tok, tokenize_rows(tok, a, second, max_length=8), to_max, 8)
        assert direct.keys() == later.keys()
        assert all(torch.equal(direct[k], later[k]) for k in direct)
