"""Scoring texts with a masked LM: vocabulary logits at chosen positions, and the log-probabilities the attacks'
LM filter (pseudo-log-likelihood) and BERT-Attack (a masked word's pieces) read."""

from __future__ import annotations

import torch
from transformers import PreTrainedModel

from robustft import runtime
from robustft.data.batching import model_inputs, pad_rows
from robustft.errors import RobustftError
from robustft.models.mlm.heads import head_at


def masked_logits(model: PreTrainedModel, batch: dict[str, torch.Tensor], where: torch.Tensor) -> torch.Tensor:
    """Vocabulary logits at the positions `where` (bool [B, T]) only: the head runs on those alone.

    Inputs are moved to the model's device here, the one entry of every masked-LM call, so callers build them
    on the CPU whatever the device."""
    device = runtime.model_device(model)
    inputs = runtime.to_device(model_inputs(batch), device)
    where = where.to(device)
    head = getattr(model, "cls", None) or getattr(model, "lm_head", None)
    if head is None:  # an architecture whose head we do not know: full logits, then select
        return model(**inputs).logits[where]
    hidden = model.base_model(**inputs).last_hidden_state
    return head_at(head, hidden, where)


def _word_encoding(tokenizer, words: list[str], max_length: int):
    enc = tokenizer(words, is_split_into_words=True, truncation=True, max_length=max_length)
    return list(enc["input_ids"]), list(enc.get("token_type_ids") or [0] * len(enc["input_ids"])), enc.word_ids()


@torch.no_grad()
def pseudo_log_likelihood(
    model, tokenizer, texts, positions=None, batch_size: int = 64, max_length: int = 256, precision: str = "auto"
) -> list[float]:
    """Masked-LM pseudo-log-likelihood (Salazar et al. 2020) of each text, in nats, higher = more fluent.

    Words are the whitespace tokens of a text. `positions[i]` (word indices) restricts text i's score to
    those words, e.g. the +-6-word window around a substitution in the genetic attack's LM filter; None
    scores every word. Each word piece of a scored word is masked on its own and adds
    log p(piece | all other pieces). Copies from all texts are batched together.
    """
    jobs, encoded = [], []
    for i, text in enumerate(texts):
        ids, types, word_ids = _word_encoding(tokenizer, text.split(), max_length)
        encoded.append((ids, types))
        wanted = None if positions is None or positions[i] is None else set(positions[i])
        jobs += [(i, t) for t, w in enumerate(word_ids) if w is not None and (wanted is None or w in wanted)]
    jobs.sort(key=lambda job: len(encoded[job[0]][0]))  # equal lengths batch without padding: faster attention
    scores = [0.0] * len(texts)
    for start in range(0, len(jobs), batch_size):
        chunk = jobs[start : start + batch_size]
        rows = []
        for i, t in chunk:
            ids, types = encoded[i]
            labels = [-100] * len(ids)
            labels[t] = ids[t]
            masked = list(ids)
            masked[t] = tokenizer.mask_token_id
            rows.append(
                {"input_ids": masked, "token_type_ids": types, "attention_mask": [1] * len(ids), "labels": labels}
            )
        batch = pad_rows(rows, tokenizer.pad_token_id)
        labels = batch.pop("labels")
        where = labels != -100  # exactly one position per row, so rows and logits line up
        with runtime.autocast(runtime.model_device(model), precision):
            logits = masked_logits(model, batch, where).float().cpu()
        logp = torch.log_softmax(logits, dim=-1).gather(1, labels[where][:, None]).squeeze(1)
        for (i, _), value in zip(chunk, logp.tolist(), strict=True):
            scores[i] += value
    return scores


@torch.no_grad()
def masked_span_log_prob(
    model, tokenizer, items, batch_size: int = 64, max_length: int = 256, precision: str = "auto"
) -> list[float]:
    """log p(the word pieces inside a character span | the rest of the text), in nats, for (text, (start, end))
    items: every piece of the span masked at once, each scored independently (BERT-Attack's scoring of a
    multi-piece word). One forward per distinct masked input: the substitutes of one word in one context share
    a row when they have as many pieces as each other, so scoring a word's 8 neighbours costs about one forward.
    A span with no piece within max_length scores 0."""
    if not getattr(tokenizer, "is_fast", False):
        raise RobustftError("masked_span_log_prob needs a fast tokenizer (character offsets)")
    rows: dict[tuple, int] = {}
    encoded, targets = [], []  # per distinct row: (ids, types); per item: (row, [(position, true id)])
    for text, (start, end) in items:
        enc = tokenizer(text, truncation=True, max_length=max_length, return_offsets_mapping=True)
        ids = list(enc["input_ids"])
        inside = [t for t, (a, b) in enumerate(enc["offset_mapping"]) if b > a and a >= start and b <= end]
        truth = [(t, ids[t]) for t in inside]
        for t in inside:
            ids[t] = tokenizer.mask_token_id
        types = list(enc.get("token_type_ids") or [0] * len(ids))
        key = (tuple(ids), tuple(types))
        if key not in rows:
            rows[key] = len(encoded)
            encoded.append((ids, types))
        targets.append((rows[key], truth))
    by_row: dict[int, list[int]] = {}
    for item, (row, truth) in enumerate(targets):
        if truth:
            by_row.setdefault(row, []).append(item)
    order = sorted(by_row, key=lambda r: len(encoded[r][0]))  # similar lengths batch with little padding
    scores = [0.0] * len(targets)
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        rows_in = [{"input_ids": encoded[r][0], "token_type_ids": encoded[r][1]} for r in chunk]
        batch = pad_rows(rows_in, tokenizer.pad_token_id)
        where = (batch["input_ids"] == tokenizer.mask_token_id) & batch["attention_mask"].bool()
        with runtime.autocast(runtime.model_device(model), precision):
            logp = torch.log_softmax(masked_logits(model, batch, where).float().cpu(), dim=-1)
        # masked_logits returns the masked positions in row-major order: index them by (row, position)
        at = {(chunk[b], t): k for k, (b, t) in enumerate(where.nonzero().tolist())}
        for r in chunk:
            for item in by_row[r]:
                scores[item] = sum(float(logp[at[(r, t)], token]) for t, token in targets[item][1])
    return scores
