"""Model calls on embeddings: every embedding-space adversary goes through `get_input_embeddings()` and
`inputs_embeds`, so it works on any Hugging Face encoder and on IM/EX models (which keep the embedding layer).
"""

from __future__ import annotations

import torch


def word_embeddings(model, batch: dict) -> torch.Tensor:
    """The word embeddings of the batch's tokens (before position/segment embeddings and LayerNorm)."""
    return model.get_input_embeddings()(batch["input_ids"])


def forward_embeds(model, batch: dict, embeds: torch.Tensor) -> torch.Tensor:
    """Logits of the model fed `embeds` in place of the batch's word embeddings."""
    kwargs = {"inputs_embeds": embeds, "attention_mask": batch["attention_mask"]}
    if batch.get("token_type_ids") is not None:
        kwargs["token_type_ids"] = batch["token_type_ids"]
    return model(**kwargs).logits


def field_token_mask(batch: dict, tokenizer, task, keep: int | None = None) -> torch.Tensor:
    """1.0 at the tokens of the task's perturbable field (special tokens and the frozen field at 0; the special
    token `keep`, RanMASK's [UNK] word, counts as the field's).

    Segments are told apart by counting separator tokens before each position, which works for
    BERT's `[CLS] a [SEP] b [SEP]` and RoBERTa's `<s> a </s></s> b </s>` alike.
    """
    ids = batch["input_ids"]
    special = torch.isin(ids, torch.tensor(sorted(set(tokenizer.all_special_ids) - {keep}), device=ids.device))
    mask = batch["attention_mask"].bool() & ~special
    if task is not None and task.is_pair:
        is_sep = ids == tokenizer.sep_token_id
        seps_before = torch.cumsum(is_sep.long(), dim=1) - is_sep.long()
        second = seps_before >= 1
        mask &= second if task.perturb_field == "text_b" else ~second
    return mask.float()
