"""The white-box ASCC attack (RIFT's evaluation): the convex-hull search of `robustft.adversary.hull`
with gain = cross-entropy of the true label (minimising -CE), then argmax of each word's weights to a
discrete word, and the model's verdict on the discrete text.

Records follow `robustft.attacks.results.AttackRecord` (TextAttack's outcomes): an example the model
already gets wrong is skipped; succeeded when the discrete text flips the prediction, failed otherwise.
`queries` counts model calls per example: the clean call, one per hull step and the discrete check.
Each example's starting logits come from its own generator seeded by (seed, index), so a record does
not depend on the batch it ran in.
"""

from __future__ import annotations

import time

import torch

from robustft.adversary.candidates import DEFAULT_SLOTS, CandidateBuilder
from robustft.adversary.hull import HullSettings, ce_gain, kaiming_logits, optimise_weights
from robustft.attacks.results import ERROR, FAILED, SKIPPED, SUCCEEDED, AttackRecord
from robustft.attacks.words import AttackedText
from robustft.data.batching import collate, encode, model_inputs
from robustft.data.example import Example


def run_ascc_attack(model, tokenizer, task, examples: list[Example], seed: int = 0, steps: int = 10,
                    lr: float = 1.0, weight_decay: float = 2e-5, entropy_weight: float = 15.0,
                    entropy_norm: float | None = 300 * 128, slots: int = DEFAULT_SLOTS, batch_size: int = 16,
                    max_length: int = 512, neighbors: dict[str, list[str]] | None = None) -> list[AttackRecord]:
    """Attack `examples` (records in input order). Defaults are the release's hull settings."""
    settings = HullSettings(steps, lr, weight_decay, entropy_weight, entropy_norm)
    builder = CandidateBuilder(tokenizer, task, neighbors, slots=slots)
    device = next(model.parameters()).device
    limit = min(max_length, getattr(model.config, "max_position_embeddings", 512))
    model.eval()
    records = []
    for start in range(0, len(examples), batch_size):
        chunk = examples[start:start + batch_size]
        began = time.perf_counter()
        try:
            records += _attack_batch(model, tokenizer, task, builder, chunk, start, seed, settings, limit, device)
        except Exception as exc:  # one bad batch must not lose the run: record it per example
            records += [AttackRecord(start + i, e.id, e.label, ERROR, e.field(task.perturb_field),
                                     e.field(task.perturb_field), task.perturb_field, reason=repr(exc))
                        for i, e in enumerate(chunk)]
        per_example = (time.perf_counter() - began) / len(chunk)
        for r in records[-len(chunk):]:
            r.seconds = per_example
    return records


def _probs(model, batch) -> torch.Tensor:
    with torch.no_grad():
        return torch.softmax(model(**model_inputs(batch)).logits.float(), dim=-1)


def _to_device(batch: dict, device) -> dict:
    return {k: v.to(device) if torch.is_tensor(v) else v for k, v in batch.items()}


def _attack_batch(model, tokenizer, task, builder, chunk, start, seed, settings, max_length, device):
    field = task.perturb_field
    batch = _to_device(collate(encode(tokenizer, chunk, max_length), tokenizer.pad_token_id), device)
    clean = _probs(model, batch)
    table = builder.build(batch)
    init = torch.zeros(table.slot_mask.shape)
    for row in range(len(chunk)):  # each example's start depends only on (seed, index), not on its batch
        n_words = max(1, len(table.words[row]))
        generator = torch.Generator().manual_seed(seed * 1_000_003 + start + row)
        init[row, :n_words] = kaiming_logits((1, n_words, table.num_slots), generator)[0]
    weights = optimise_weights(model, batch, table, ce_gain(batch["labels"]), settings, init=init)
    choice = weights.argmax(-1).tolist()

    adversarial, texts = [], []
    for row, example in enumerate(chunk):
        text = AttackedText(example.field(field))
        changes = {w.word_index: w.candidates[choice[row][i]] for i, w in enumerate(table.words[row])
                   if choice[row][i] > 0}
        text = text.replace_words(changes)
        texts.append(text)
        adversarial.append(example.with_field(field, text.text))
    adv = _probs(model, _to_device(collate(encode(tokenizer, adversarial, max_length), tokenizer.pad_token_id), device))

    records = []
    for row, example in enumerate(chunk):
        label, pred, adv_pred = example.label, int(clean[row].argmax()), int(adv[row].argmax())
        result = SKIPPED if pred != label else (SUCCEEDED if adv_pred != label else FAILED)
        text = texts[row]
        other = "text_a" if field == "text_b" else "text_b"
        records.append(AttackRecord(
            index=start + row, id=example.id, label=label, result=result, original=example.field(field),
            adversarial=example.field(field) if result == SKIPPED else text.text, perturbed_field=field,
            context=getattr(example, other) if task.is_pair else None, original_pred=pred,
            adversarial_pred=pred if result == SKIPPED else adv_pred, original_probs=clean[row].tolist(),
            adversarial_probs=(clean if result == SKIPPED else adv)[row].tolist(),
            swaps=[] if result == SKIPPED else text.swaps(), num_words=text.num_words,
            queries=1 if result == SKIPPED else settings.steps + 2,
            reason="already misclassified" if result == SKIPPED else f"{len(table.words[row])} words could move"))
    return records
