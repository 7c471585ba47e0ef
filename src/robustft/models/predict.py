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
from robustft.errors import ConfigError, RobustftError


@torch.no_grad()
def class_probs(
    model,
    tokenizer,
    examples: list[Example],
    max_length: int = 128,
    batch_size: int = 128,
    precision: str = "auto",
    pad_to_max_length: bool = False,
    progress: bool = False,
    pad_to_multiple_of: int | None = None,
) -> torch.Tensor:
    """(n, num_labels) float32 probabilities on the CPU, in input order.

    pad_to_multiple_of: each batch's width rounded up to a multiple of it (at most `max_length`), so few
    distinct shapes reach the model (CPU bf16 kernels pay a set-up cost per new shape; docs/performance.md).
    Padding is attention-masked: probabilities are unchanged up to float noise."""
    if pad_to_multiple_of is not None and (isinstance(pad_to_multiple_of, bool) or pad_to_multiple_of < 1):
        raise ConfigError(f"pad_to_multiple_of: must be a positive integer or None, got {pad_to_multiple_of!r}")
    device = runtime.model_device(model)
    items = encode(tokenizer, examples, max_length)
    probs = torch.empty(len(items), model.config.num_labels)
    was_training = model.training
    model.eval()
    for idx in tqdm(eval_batches(items, batch_size), desc="predict", disable=not progress, leave=False):
        width = (
            max_length
            if pad_to_max_length
            else _bucket(max(len(items[i].input_ids) for i in idx), pad_to_multiple_of, max_length)
        )
        batch = collate([items[i] for i in idx], tokenizer.pad_token_id, width)
        with runtime.autocast(device, precision):
            logits = model(**runtime.to_device(model_inputs(batch), device)).logits
        probs[idx] = F.softmax(logits.float(), dim=-1).cpu()
    model.train(was_training)
    broken = probs.isnan().any(-1).nonzero().flatten().tolist()
    if broken:  # argmax of NaN is class 0: a broken model would be scored as a majority-class guesser
        raise NonFiniteOutput(
            f"the model's outputs are NaN for {len(broken)} of {len(items)} examples (first: "
            f"{examples[broken[0]].id}): its weights or config.json (e.g. layer_norm_eps) are broken: nothing scored"
        )
    return probs


class NonFiniteOutput(RobustftError):
    """A model computed NaN class probabilities."""


def _bucket(width: int, multiple: int | None, limit: int) -> int | None:
    """`width` rounded up to a multiple of `multiple`, never past `limit` (None: the batch's longest)."""
    if not multiple:
        return None
    return max(width, min(-(-width // multiple) * multiple, limit))


def accuracy(model, tokenizer, examples: list[Example], **kwargs) -> dict[str, float]:
    """Accuracy and mean cross-entropy of `examples` (kwargs as `class_probs`)."""
    return accuracy_from_probs(class_probs(model, tokenizer, examples, **kwargs), [e.label for e in examples])


def accuracy_from_probs(probs: torch.Tensor, labels: list[int]) -> dict[str, float]:
    """Accuracy and mean cross-entropy of (n, num_labels) probabilities against their labels."""
    labels = torch.tensor(labels)
    loss = F.nll_loss(torch.log(probs.clamp_min(1e-12)), labels).item()
    return {"accuracy": (probs.argmax(-1) == labels).float().mean().item(), "loss": loss, "n": len(labels)}


def model_label_names(config) -> list[str]:
    id2label = getattr(config, "id2label", None) or {}
    return [str(id2label.get(i, id2label.get(str(i), f"LABEL_{i}"))) for i in range(config.num_labels)]


def check_labels(model, task) -> str | None:
    """Refuse to score or attack a model on a task whose labels it was not trained to predict (an SST-2 model on
    RTE has two labels too: the names decide). Hugging Face's placeholder names (LABEL_0, ...) say nothing about
    the task: then only the count is checked and a note is returned for the run's config."""
    names = model_label_names(model.config)
    if len(names) != task.num_labels:
        raise ConfigError(
            f"the model predicts {len(names)} labels {names}, task '{task.name}' has "
            f"{task.num_labels} {list(task.label_names)}"
        )
    if all(n == f"LABEL_{i}" for i, n in enumerate(names)):
        return f"the model's labels are unnamed ({', '.join(names)}): assumed to be {list(task.label_names)} in order"
    if [n.lower() for n in names] != [n.lower() for n in task.label_names]:
        raise ConfigError(
            f"the model's labels {names} do not match task '{task.name}' labels "
            f"{list(task.label_names)}: it was trained on another task"
        )
    return None
