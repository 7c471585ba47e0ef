"""An ensemble forwards each distinct copy once (issue 64 item 4): the same probabilities as forwarding every copy,
from exactly as many classifier rows as there are distinct copies (counted here by hand from the copies' tokens)."""

import math

import pytest
import torch

from robustft.data.batching import collate, encode
from robustft.data.example import Example
from robustft.data.tasks import get_task
from robustft.defenses.ensemble import EnsembleClassifier, row_generator
from robustft.defenses.settings import EnsembleSettings
from robustft.models.factory import tiny_bert

SST2 = get_task("sst2")
# short texts repeat their masked copies often; a duplicate text shares all of its copies with its twin
TEXTS = ["a fine film", "terrible , boring film", "a fine film", "the plot is a mess but the cast is great"]


@pytest.fixture(scope="module")
def tiny():
    return tiny_bert(2, seed=0)


def batch(tok):
    items = encode(tok, [Example(t, 0) for t in TEXTS], 64)
    out = collate(items, tok.pad_token_id)
    return {k: out[k] for k in ("input_ids", "attention_mask")}


def rows_seen(model):
    seen = []
    hook = model.register_forward_hook(lambda m, args, kwargs, out: seen.append(kwargs), with_kwargs=True)
    return seen, hook


@pytest.mark.parametrize("kind", ["ranmask", "safer"])
def test_distinct_copies_give_every_copy_s_probabilities_from_one_forward_each(tiny, kind):
    model, tok = tiny
    inputs = batch(tok)
    settings = EnsembleSettings(kind, copies=40, vote="probs", chunk=16)
    every = EnsembleClassifier(model, tok, SST2, settings, distinct_only=False)
    distinct = EnsembleClassifier(model, tok, SST2, settings)
    words = every.defense.words(inputs["input_ids"], inputs["attention_mask"])
    gens = [row_generator(inputs["input_ids"][r], inputs["attention_mask"][r], 0) for r in range(len(TEXTS))]
    copies = every.defense.copies(inputs["input_ids"], inputs["attention_mask"], None, words, gens)
    # the oracle: the copies' real tokens as Python tuples, counted in a set
    expected = {
        tuple(ids[mask.bool()].tolist())
        for ids, mask in zip(copies["input_ids"], copies["attention_mask"], strict=True)
    }
    assert len(expected) < 4 * 40  # the case exercises repeats
    seen, hook = rows_seen(model)
    try:
        got = distinct(**inputs).logits
    finally:
        hook.remove()
    assert sum(len(k["input_ids"]) for k in seen) == len(expected)
    assert len(seen) == math.ceil(len(expected) / 16)
    assert torch.allclose(got.exp(), every(**inputs).logits.exp(), atol=1e-5)
    assert torch.allclose(got[0], got[2])  # the twin texts: the same copies, the same answer


def test_each_chunk_is_cut_to_its_longest_row_and_dne_forwards_every_copy(tiny):
    model, tok = tiny
    inputs = batch(tok)
    lengths = inputs["attention_mask"].sum(1)
    seen, hook = rows_seen(model)
    try:
        EnsembleClassifier(model, tok, SST2, EnsembleSettings("ranmask", copies=8, chunk=4))(**inputs)
    finally:
        hook.remove()
    widths = [k["input_ids"].shape[1] for k in seen]
    assert widths == sorted(widths) and widths[0] < int(lengths.max())  # shortest first, short chunks cut
    seen, hook = rows_seen(model)
    try:
        EnsembleClassifier(model, tok, SST2, EnsembleSettings("dne", copies=6, chunk=1000))(**inputs)
    finally:
        hook.remove()
    assert sum(len(k["inputs_embeds"]) for k in seen) == 4 * 6
