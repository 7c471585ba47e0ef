"""Clean accuracy of a classifier on a list of examples: batched by length, no_grad, optional bf16."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from robustft.data.batching import collate, encode, eval_batches, model_inputs
from robustft.data.example import Example


def autocast(device: torch.device, enabled: bool):
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=enabled)


@torch.no_grad()
def predict(
    model,
    tokenizer,
    examples: list[Example],
    max_length: int = 128,
    batch_size: int = 128,
    bf16: bool = True,
    progress: bool = False,
) -> torch.Tensor:
    """Class probabilities (float32, input order) for every example."""
    device = next(model.parameters()).device
    items = encode(tokenizer, examples, max_length)
    probs = torch.empty(len(items), model.config.num_labels)
    was_training = model.training
    model.eval()
    for idx in tqdm(eval_batches(items, batch_size), desc="eval", disable=not progress, leave=False):
        batch = collate([items[i] for i in idx], tokenizer.pad_token_id)
        inputs = {k: v.to(device) for k, v in model_inputs(batch).items()}
        with autocast(device, bf16):
            logits = model(**inputs).logits
        probs[idx] = F.softmax(logits.float(), dim=-1).cpu()
    model.train(was_training)
    return probs


def accuracy(model, tokenizer, examples: list[Example], **kwargs) -> dict[str, float]:
    probs = predict(model, tokenizer, examples, **kwargs)
    labels = torch.tensor([e.label for e in examples])
    loss = F.nll_loss(torch.log(probs.clamp_min(1e-12)), labels).item()
    return {"accuracy": (probs.argmax(-1) == labels).float().mean().item(), "loss": loss, "n": len(examples)}
