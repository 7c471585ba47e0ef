"""Tokenise once, then batch: length-grouped or class-balanced order, padded to the longest in the batch."""

from __future__ import annotations

import random
from dataclasses import dataclass

import torch

from robustft.data.example import Example


@dataclass
class Encoded:
    """Token ids of one example, computed once per run."""

    example: Example
    input_ids: list[int]
    token_type_ids: list[int] | None


def encode(tokenizer, examples: list[Example], max_length: int) -> list[Encoded]:
    a = [e.text_a for e in examples]
    b = [e.text_b for e in examples] if examples and examples[0].is_pair else None
    enc = tokenizer(a, b, truncation=True, max_length=max_length)
    types = enc.get("token_type_ids")
    return [Encoded(e, enc["input_ids"][i], types[i] if types is not None else None) for i, e in enumerate(examples)]


def tokenize_pad(
    tokenizer,
    texts_a: list[str],
    texts_b: list[str] | None = None,
    max_length: int | None = None,
    pad_to_max_length: bool = False,
    **extra,
) -> dict:
    """Tokenise and pad to the longest row (or to `max_length`), as tensors: the tokenise-and-pad of every model
    call that starts from text (masked LM, probe, sentence encoder; the victim tokenises first and pads each
    length group: `tokenize_rows`, `pad_tokenized`)."""
    return tokenizer(
        texts_a,
        texts_b,
        truncation=max_length is not None,
        max_length=max_length,
        padding="max_length" if pad_to_max_length else "longest",
        return_tensors="pt",
        **extra,
    )


def tokenize_rows(tokenizer, texts_a: list[str], texts_b: list[str] | None = None, max_length: int | None = None):
    """Token ids of each row, truncated, not padded: to group rows by length before `pad_tokenized` pads each group."""
    return tokenizer(texts_a, texts_b, truncation=max_length is not None, max_length=max_length)


def pad_tokenized(tokenizer, rows, pad_to_max_length: bool = False, max_length: int | None = None) -> dict:
    """Rows from `tokenize_rows` as tensors, padded on the tokenizer's side to the longest row (or to `max_length`):
    the same tensors `tokenize_pad` gives for their texts."""
    padding = "max_length" if pad_to_max_length else "longest"
    return tokenizer.pad(rows, padding=padding, max_length=max_length, return_tensors="pt")


def padded_cost_batches(lengths: list[int], batch_size: int, call_overhead: float) -> list[list[int]]:
    """Rows (by index) in batches of at most `batch_size`, sorted by length, each padded to its longest, so that the
    padded tokens plus `call_overhead` token-rows per model call are fewest (dynamic programming over the sorted
    lengths). Rows of very different lengths then go in separate calls unless a call costs more than their padding;
    call_overhead=inf gives plain chunks of `batch_size` of the sorted rows."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    if call_overhead == float("inf"):
        return [order[s : s + batch_size] for s in range(0, len(order), batch_size)]
    sorted_lengths = [lengths[i] for i in order]
    best, cut = [0.0] + [float("inf")] * len(order), [0] * (len(order) + 1)
    for end in range(1, len(order) + 1):
        widest = sorted_lengths[end - 1]  # every row of a batch ending here is padded to this
        for start in range(max(0, end - batch_size), end):
            cost = best[start] + call_overhead + (end - start) * widest
            if cost < best[end]:
                best[end], cut[end] = cost, start
    batches, end = [], len(order)
    while end > 0:
        batches.append(order[cut[end] : end])
        end = cut[end]
    return batches[::-1]


def model_inputs(batch: dict) -> dict[str, torch.Tensor]:
    """The tensors a Hugging Face model takes from a collated batch (labels and raw examples left out)."""
    return {k: v for k, v in batch.items() if k in ("input_ids", "attention_mask", "token_type_ids")}


# What each padded key is filled with past a row's end (-100: positions a loss ignores).
PAD_FILLS = {"token_type_ids": 0, "attention_mask": 0, "special_tokens_mask": 1, "labels": -100}


def pad_rows(rows: list[dict], pad_id: int, width: int | None = None) -> dict[str, torch.Tensor]:
    """Token lists of several rows (input_ids and any of PAD_FILLS' keys) padded into tensors, to the longest row
    or to `width`; a row without an attention mask gets ones over its tokens."""
    width = width or max(len(r["input_ids"]) for r in rows)
    out = {}
    for key in ("input_ids", *PAD_FILLS):
        if key == "attention_mask" or key in rows[0]:
            fill = pad_id if key == "input_ids" else PAD_FILLS[key]
            values = [list(r.get(key, [1] * len(r["input_ids"]))) for r in rows]
            out[key] = torch.tensor([v + [fill] * (width - len(v)) for v in values], dtype=torch.long)
    return out


def collate(items: list[Encoded], pad_id: int, pad_to: int | None = None) -> dict:
    """Pad to the longest item (or to `pad_to`); keeps the raw examples for objectives that need text."""
    rows = [
        {"input_ids": it.input_ids}
        if it.token_type_ids is None
        else {"input_ids": it.input_ids, "token_type_ids": it.token_type_ids}
        for it in items
    ]
    batch = pad_rows(rows, pad_id, pad_to)
    batch["labels"] = torch.tensor([it.example.label for it in items])
    batch["examples"] = [it.example for it in items]
    return batch


def epoch_batches(
    items: list[Encoded],
    batch_size: int,
    seed: int,
    epoch: int,
    group_by_length: bool = True,
    class_balanced: bool = False,
) -> list[list[int]]:
    """The batch order of one epoch: a pure function of (seed, epoch), which makes resume exact."""
    rng = random.Random(seed * 100_003 + epoch)
    if class_balanced:
        return _class_balanced(items, batch_size, rng, group_by_length)
    order = list(range(len(items)))
    rng.shuffle(order)
    if not group_by_length:
        return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
    # Sort within windows of GROUP_WINDOW batches: similar lengths share a batch, the order stays random.
    window = GROUP_WINDOW * batch_size
    batches = []
    for start in range(0, len(order), window):
        chunk = _by_length(items, order[start : start + window])
        batches += [chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size)]
    rng.shuffle(batches)
    return batches


GROUP_WINDOW = 50


def _by_length(items, indices: list[int]) -> list[int]:
    return sorted(indices, key=lambda i: len(items[i].input_ids), reverse=True)


def _class_balanced(items, batch_size, rng, group_by_length: bool = True) -> list[list[int]]:
    """B/C examples of each class per batch (RIFT); an epoch ends when the largest class is used up,
    smaller classes are re-shuffled and cycled. With `group_by_length`, each class's examples of a window of
    batches are sorted by length and dealt out in that order, so a batch holds the j-th shortest of every class:
    still exactly balanced, and padded to similar lengths (up to 3x less padding on SST-2). The RIFT release draws
    at random (group_by_length=False); docs/rift.md lists this as a deviation for speed."""
    by_label: dict[int, list[int]] = {}
    for i, it in enumerate(items):
        by_label.setdefault(it.example.label, []).append(i)
    per = max(1, batch_size // len(by_label))
    pools = {c: rng.sample(idx, len(idx)) for c, idx in sorted(by_label.items())}
    n_batches = -(-max(len(v) for v in pools.values()) // per)
    streams = {}
    for c, pool in pools.items():
        stream, cursor = [], 0
        for _ in range(n_batches * per):
            if cursor == len(pool):
                rng.shuffle(pool)
                cursor = 0
            stream.append(pool[cursor])
            cursor += 1
        streams[c] = stream
    if not group_by_length:
        return [[i for s in streams.values() for i in s[b * per : (b + 1) * per]] for b in range(n_batches)]
    batches = []
    for start in range(0, n_batches, GROUP_WINDOW):
        size = min(GROUP_WINDOW, n_batches - start)
        sorted_streams = [_by_length(items, s[start * per : (start + size) * per]) for s in streams.values()]
        batches += [[i for s in sorted_streams for i in s[b * per : (b + 1) * per]] for b in range(size)]
    rng.shuffle(batches)
    return batches


def eval_batches(items: list[Encoded], batch_size: int) -> list[list[int]]:
    """Evaluation order: by length, so padding is minimal; results are put back in input order."""
    order = sorted(range(len(items)), key=lambda i: len(items[i].input_ids))
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


def rank_slice(batch: list[int], rank: int, size: int) -> tuple[list[int], float]:
    """This process's part of a global batch under multi-process training, and its loss weight.

    Every `size`-th example from `rank`: a class-balanced batch stays balanced on every rank and a length-grouped one
    keeps its lengths, so the global batch (and the epoch's order) is the single-process batch. The weight
    `len(part) * size / len(batch)` makes the ranks' weighted mean losses, averaged by the gradient sync, the mean
    over the global batch. A rank left without an example (a last batch smaller than the world) takes the first one
    with weight 0, so it still joins the sync.
    """
    part = batch[rank::size]
    if not part:
        return batch[:1], 0.0
    return part, len(part) * size / len(batch)
