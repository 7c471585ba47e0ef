"""BERT's masking of word pieces, and the held-out masked-token accuracy of a masked LM (docs/mlm_head.md)."""

from __future__ import annotations

import torch
from transformers import PreTrainedTokenizerBase

from robustft import runtime
from robustft.data.batching import pad_rows
from robustft.models.mlm.scoring import masked_logits


def replacement_ids(tokenizer: PreTrainedTokenizerBase) -> torch.Tensor:
    """Token ids a random replacement may use: the vocabulary less special and [unused] tokens."""
    special = set(tokenizer.all_special_ids)
    vocab = tokenizer.get_vocab()
    return torch.tensor(sorted(i for t, i in vocab.items() if i not in special and not t.startswith("[unused")))


def mask_for_mlm(
    input_ids: torch.Tensor,
    special: torch.Tensor,
    mask_id: int,
    random_ids: torch.Tensor,
    generator: torch.Generator,
    rate: float = 0.15,
    all_mask: bool = False,
):
    """BERT masking: choose `rate` of the non-special tokens; 80% -> [MASK], 10% random, 10% kept.

    Returns (inputs, labels) with labels -100 where nothing is predicted. `all_mask` turns every chosen
    token into [MASK] (the held-out accuracy protocol).
    """
    prob = torch.full(input_ids.shape, rate)
    prob[special] = 0.0
    chosen = torch.bernoulli(prob, generator=generator).bool()
    labels = torch.where(chosen, input_ids, torch.full_like(input_ids, -100))
    inputs = input_ids.clone()
    if all_mask:
        inputs[chosen] = mask_id
        return inputs, labels
    roll = torch.rand(input_ids.shape, generator=generator)
    inputs[chosen & (roll < 0.8)] = mask_id
    swap = chosen & (roll >= 0.8) & (roll < 0.9)
    picks = torch.randint(len(random_ids), (int(swap.sum()),), generator=generator)
    inputs[swap] = random_ids[picks]
    return inputs, labels


def encode(tokenizer, texts, max_length: int):
    """Tokenise strings or (text_a, text_b) pairs without padding."""
    if texts and isinstance(texts[0], (tuple, list)):
        return tokenizer(
            [t[0] for t in texts],
            [t[1] for t in texts],
            truncation=True,
            max_length=max_length,
            return_special_tokens_mask=True,
        )
    return tokenizer(list(texts), truncation=True, max_length=max_length, return_special_tokens_mask=True)


@torch.no_grad()
def masked_token_accuracy(
    model,
    tokenizer,
    texts,
    rate: float = 0.15,
    seed: int = 0,
    batch_size: int = 64,
    max_length: int = 128,
    ks: tuple[int, ...] = (1, 10),
    precision: str = "auto",
) -> dict:
    """Held-out masked-token top-k accuracy: `rate` of the word pieces -> [MASK] (seeded), predict each."""
    generator = torch.Generator().manual_seed(seed)
    random_ids = replacement_ids(tokenizer)
    enc = encode(tokenizer, texts, max_length)
    rows = sorted(
        ({k: enc[k][i] for k in enc.keys()} for i in range(len(texts))), key=lambda r: len(r["input_ids"])
    )  # stable: the same texts always get the same masks
    hits, total, nll = {k: 0 for k in ks}, 0, 0.0
    for start in range(0, len(rows), batch_size):
        batch = pad_rows(rows[start : start + batch_size], tokenizer.pad_token_id)
        inputs, labels = mask_for_mlm(
            batch["input_ids"],
            batch["special_tokens_mask"].bool(),
            tokenizer.mask_token_id,
            random_ids,
            generator,
            rate,
            all_mask=True,
        )
        where = labels != -100
        if not where.any():
            continue
        batch["input_ids"] = inputs
        with runtime.autocast(runtime.model_device(model), precision):
            logits = masked_logits(model, batch, where).float().cpu()
        gold = labels[where]
        nll += torch.nn.functional.cross_entropy(logits, gold, reduction="sum").item()
        top = logits.topk(max(ks), dim=-1).indices
        for k in ks:
            hits[k] += (top[:, :k] == gold[:, None]).any(-1).sum().item()
        total += len(gold)
    out = {"tokens": total, "loss": nll / max(total, 1)}
    out.update({f"top{k}": hits[k] / max(total, 1) for k in ks})
    return out
