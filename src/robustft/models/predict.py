"""Class probabilities of a classifier for a list of examples: the one batched prediction path of training
(dev selection), evaluation, the victim of black-box attacks and the white-box attack.

Examples are tokenised once, sorted by length, padded to the longest in each batch (never to the model maximum
unless asked), moved to the model's device, run under no_grad and the run's autocast, and put back in input order.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from robustft import runtime
from robustft.data.batching import collate, encode, eval_batches, model_inputs
from robustft.data.example import Example
from robustft.errors import ConfigError


@torch.no_grad()
def class_probs(model, tokenizer, examples: list[Example], max_length: int = 128, batch_size: int = 128,
                precision: str = "auto", pad_to_max_length: bool = False, progress: bool = False) -> torch.Tensor:
    """(n, num_labels) float32 probabilities on the CPU, in input order."""
    device = runtime.model_device(model)
    items = encode(tokenizer, examples, max_length)
    probs = torch.empty(len(items), model.config.num_labels)
    was_training = model.training
    model.eval()
    for idx in tqdm(eval_batches(items, batch_size), desc="predict", disable=not progress, leave=False):
        batch = collate([items[i] for i in idx], tokenizer.pad_token_id, max_length if pad_to_max_length else None)
        with runtime.autocast(device, precision):
            logits = model(**runtime.to_device(model_inputs(batch), device)).logits
        probs[idx] = F.softmax(logits.float(), dim=-1).cpu()
    model.train(was_training)
    return probs


def accuracy(model, tokenizer, examples: list[Example], **kwargs) -> dict[str, float]:
    """Accuracy and mean cross-entropy of `examples` (kwargs as `class_probs`)."""
    probs = class_probs(model, tokenizer, examples, **kwargs)
    labels = torch.tensor([e.label for e in examples])
    loss = F.nll_loss(torch.log(probs.clamp_min(1e-12)), labels).item()
    return {"accuracy": (probs.argmax(-1) == labels).float().mean().item(), "loss": loss, "n": len(examples)}


def label_names(model) -> list[str]:
    id2label = model.config.id2label
    return [str(id2label.get(i, id2label.get(str(i)))) for i in range(model.config.num_labels)]


def check_labels(model, task) -> None:
    """A model trained on one label set must not be scored on another (e.g. an SST-2 model on RTE)."""
    names = label_names(model)
    if names != list(task.label_names):
        raise ConfigError(f"the model's labels {names} do not match task '{task.name}' labels "
                          f"{list(task.label_names)}")
