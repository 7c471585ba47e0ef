"""Prediction by an ensemble of randomly perturbed copies (SAFER, RanMASK, DNE), as one `nn.Module`.

`EnsembleClassifier` wraps a sequence classifier and answers `model(input_ids=..., attention_mask=...)` like it, so
the evaluation, the victim of every black-box attack and the certificate use it unchanged: each row is copied
`copies` times, every copy gets its defense's noise (`robustft.defenses`), all copies of a batch go through the
classifier together (`forward_copies`, in chunks of `chunk` rows), and the returned logits are the log of the
ensemble's class probabilities, so a softmax of them gives those probabilities back.

The noise of a row is a pure function of the row's tokens and the seed (its generator is seeded from both), not of
the batch it comes in or its padding: the same text always gets the same copies, so a cached victim, a sharded
evaluation and a re-run agree. The white-box path (`inputs_embeds`) reaches the wrapped classifier itself.

A trained SAFER, RanMASK or DNE model carries its ensemble in its config (`robustft_ensemble`); `as_ensemble` wraps
such a model and returns any other model unchanged.
"""

from __future__ import annotations

import dataclasses
import zlib

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from transformers.modeling_outputs import SequenceClassifierOutput

from robustft.defenses.base import Defense
from robustft.defenses.registry import defense_for
from robustft.defenses.settings import CONFIG_KEY, EnsembleSettings


class EnsembleClassifier(nn.Module):
    """A sequence classifier that predicts by the ensemble of `settings.copies` noisy copies of each input."""

    def __init__(
        self,
        model: nn.Module,
        tokenizer,
        task,
        settings: EnsembleSettings,
        defense: Defense | None = None,
        distinct_only: bool = True,
    ):
        super().__init__()
        # False: every copy forwarded at the batch's width, as before 2026-12-07 (benchmarks/ensemble_cost.py
        # measures both)
        self.distinct_only = distinct_only
        self.model = model
        self.config = model.config
        self.tokenizer = tokenizer
        self.task = task
        self.settings = settings
        self.defense = defense if defense is not None else defense_for(settings, tokenizer, task)

    @property
    def table(self):
        return self.defense.table

    def get_input_embeddings(self):
        return self.model.get_input_embeddings()

    def with_settings(self, **changes) -> EnsembleClassifier:
        """The same classifier with other ensemble settings (the certificate's own copies and seed)."""
        settings = dataclasses.replace(self.settings, **changes)
        defense = self.defense.with_settings(settings)
        return EnsembleClassifier(self.model, self.tokenizer, self.task, settings, defense, self.distinct_only)

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, inputs_embeds=None, **kwargs):
        if inputs_embeds is not None:  # white-box attacks differentiate the wrapped classifier
            return self.model(
                inputs_embeds=inputs_embeds, attention_mask=attention_mask, token_type_ids=token_type_ids, **kwargs
            )
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        probs = self.ensemble_probs(input_ids, attention_mask, token_type_ids)
        return SequenceClassifierOutput(logits=probs.clamp_min(1e-12).log())

    @torch.no_grad()
    def ensemble_probs(self, input_ids, attention_mask, token_type_ids=None) -> torch.Tensor:
        """[B, C] class probabilities of the ensemble (vote shares under "votes")."""
        words = self.defense.words(input_ids, attention_mask)
        generators = [row_generator(input_ids[r], attention_mask[r], self.settings.seed) for r in range(len(input_ids))]
        rows = self.defense.copies(input_ids, attention_mask, token_type_ids, words, generators)
        logits = self.forward_copies(rows)
        return combine(logits.view(input_ids.shape[0], self.settings.copies, -1), self.settings.vote)

    def forward_copies(self, rows: dict) -> torch.Tensor:
        """[B * n, C] logits of every copy: the one place copies reach the classifier. Copies made of token ids
        only (SAFER, RanMASK) are forwarded once per distinct copy (a short text under 90% masking repeats most of
        its copies; candidate texts of one attack step share many), shortest first in chunks of `chunk` rows,
        each chunk cut to its longest row; DNE's copies carry continuous weights and are all forwarded."""
        if not self.distinct_only:
            return self._forward_chunks(rows, cut=False)
        if any(v.is_floating_point() for v in rows.values()):
            return self._forward_chunks(rows)
        mask = rows["attention_mask"]
        keys = torch.cat([v * mask if k != "attention_mask" else v for k, v in rows.items()], dim=1)
        distinct, inverse = torch.unique(keys, dim=0, return_inverse=True)
        first = torch.full((len(distinct),), len(keys), dtype=torch.long, device=keys.device)
        first.scatter_reduce_(0, inverse, torch.arange(len(keys), device=keys.device), reduce="amin")
        order = first[mask[first].sum(1).argsort(stable=True)]  # one row per distinct copy, shortest first
        logits = self._forward_chunks({k: v[order] for k, v in rows.items()})
        at = torch.empty_like(order)
        at[inverse[order]] = torch.arange(len(order), device=order.device)
        return logits[at[inverse]]

    def _forward_chunks(self, rows: dict, cut: bool = True) -> torch.Tensor:
        total = len(next(iter(rows.values())))
        outputs = []
        for start in range(0, total, self.settings.chunk):
            chunk = {k: v[start : start + self.settings.chunk] for k, v in rows.items()}
            chunk = trim(chunk) if cut else chunk
            outputs.append(self.model(**self.defense.model_inputs(self.model, chunk)).logits.float())
        return torch.cat(outputs)


def trim(rows: dict) -> dict:
    """The rows without the trailing positions that are padding in every row (right padding: nothing a real token
    attends to is removed)."""
    real = rows["attention_mask"].any(0).nonzero()
    end = int(real.max()) + 1 if len(real) else 1
    return rows if end == rows["attention_mask"].shape[1] else {k: v[:, :end] for k, v in rows.items()}


def row_generator(ids: torch.Tensor, mask: torch.Tensor, seed: int) -> torch.Generator:
    """A CPU generator seeded by the row's real tokens and `seed`: the row's noise whatever its batch or padding."""
    tokens = ids[mask.bool()].cpu().numpy().astype(np.int64).tobytes()
    return torch.Generator().manual_seed(zlib.crc32(tokens, seed & 0xFFFFFFFF))


def combine(logits: torch.Tensor, vote: str) -> torch.Tensor:
    """[B, C] ensemble probabilities from the copies' logits [B, n, C]."""
    if vote == "votes":
        return F.one_hot(logits.argmax(-1), logits.shape[-1]).float().mean(1)
    if vote == "probs":
        return logits.softmax(-1).mean(1)
    unit = logits / logits.norm(dim=-1, keepdim=True).clamp_min(1e-12)
    return unit.mean(1).softmax(-1)


def unwrap(model: nn.Module) -> nn.Module:
    """The classifier inside an ensemble (the model itself otherwise)."""
    return model.model if isinstance(model, EnsembleClassifier) else model


def ensemble_settings(model) -> EnsembleSettings | None:
    """The ensemble a trained model predicts with (its config's `robustft_ensemble`), or None."""
    values = getattr(getattr(model, "config", None), CONFIG_KEY, None)
    return EnsembleSettings.from_config(dict(values)) if values else None


def as_ensemble(model: nn.Module, tokenizer, task) -> nn.Module:
    """`model` wrapped in its ensemble when its config names one (a SAFER, RanMASK or DNE run), else `model`."""
    if isinstance(model, EnsembleClassifier):
        return model
    settings = ensemble_settings(model)
    return model if settings is None else EnsembleClassifier(model, tokenizer, task, settings)
