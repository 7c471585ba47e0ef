"""Prediction by an ensemble of randomly perturbed copies (SAFER, RanMASK, DNE), as one `nn.Module`.

`EnsembleClassifier` wraps a sequence classifier and answers `model(input_ids=..., attention_mask=...)` like it, so
the evaluation, the victim of every black-box attack and the certificate use it unchanged: each row is copied
`copies` times, every copy gets its own noise (`robustft.adversary.smoothing`), all copies of a batch go through
the classifier together (in chunks of `chunk` rows), and the returned logits are the log of the ensemble's class
probabilities, so a softmax of them gives those probabilities back.

The noise of a row is a pure function of the row's tokens and the seed (its generator is seeded from both), not of
the batch it comes in or its padding: the same text always gets the same copies, so a cached victim, a sharded
evaluation and a re-run agree. The white-box path (`inputs_embeds`) reaches the wrapped classifier itself.

A trained SAFER, RanMASK or DNE model carries its ensemble in its config (`robustft_ensemble`); `as_ensemble` wraps
such a model and returns any other model unchanged.
"""

from __future__ import annotations

import dataclasses
import zlib
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from transformers.modeling_outputs import SequenceClassifierOutput

from robustft.adversary import smoothing
from robustft.errors import ConfigError

CONFIG_KEY = "robustft_ensemble"
KINDS = ("safer", "ranmask", "dne")
# logits: TextDefender's default ('logits': the copies' logits, each scaled to unit L2 norm, averaged, then a
# softmax); probs: the mean of the copies' class probabilities; votes: each class's share of the copies' argmaxes
# (what the certificates count).
VOTES = ("logits", "probs", "votes")


@dataclass(frozen=True)
class EnsembleSettings:
    kind: str
    copies: int = 100  # TextDefender's ensemble_num (DNE: 12, its wrapper's constant)
    vote: str = "logits"  # TextDefender's ensemble_method default
    rate: float = 0.9  # RanMASK: share of words masked
    min_keep: int = 2  # RanMASK: words always left unmasked (TextDefender's mask_sentence)
    alpha: float = 1.0  # DNE: Dirichlet concentration of a word and its neighbours
    decay: float = 0.5  # DNE: factor on the concentration of second-order neighbours
    neighbours: int = 50  # DNE: table width (the word and up to 49 neighbours); SAFER: 9 (the word + 8)
    seed: int = 0
    # rows per forward of the copies: on CPU 32-row forwards ran 20% faster than 128 or 512 (benchmarks/results/
    # ensemble_cost.json, MiniLM); a GPU wants far more
    chunk: int = 32

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ConfigError(f"ensemble kind must be one of {', '.join(KINDS)}, not {self.kind!r}")
        if self.vote not in VOTES:
            raise ConfigError(f"ensemble vote must be one of {', '.join(VOTES)}, not {self.vote!r}")
        if self.copies < 1 or self.chunk < 1:
            raise ConfigError(f"ensemble copies and chunk must be at least 1, not {self.copies} and {self.chunk}")
        if not 0.0 <= self.rate < 1.0:
            raise ConfigError(f"ensemble mask rate must be in [0, 1), not {self.rate}")

    def to_config(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_config(cls, values: dict) -> EnsembleSettings:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ConfigError(f"{CONFIG_KEY} in the model config has unknown keys: {', '.join(unknown)}")
        return cls(**values)


class EnsembleClassifier(nn.Module):
    """A sequence classifier that predicts by the ensemble of `settings.copies` noisy copies of each input."""

    def __init__(self, model: nn.Module, tokenizer, task, settings: EnsembleSettings):
        super().__init__()
        self.model = model
        self.config = model.config
        self.tokenizer = tokenizer
        self.task = task
        self.settings = settings
        width = settings.neighbours if settings.kind == "dne" else 9
        self.table = smoothing.neighbour_table(tokenizer, width=width, second_order=settings.kind == "dne")
        self._tables = {torch.device("cpu"): self.table}  # the table on each device it was used on, moved once
        if settings.kind == "ranmask" and tokenizer.mask_token_id is None:
            raise ConfigError("RanMASK needs a tokenizer with a mask token")

    def get_input_embeddings(self):
        return self.model.get_input_embeddings()

    def with_settings(self, **changes) -> EnsembleClassifier:
        """The same classifier with other ensemble settings (the certificate's own copies and seed)."""
        return EnsembleClassifier(self.model, self.tokenizer, self.task, dataclasses.replace(self.settings, **changes))

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
        n, b = self.settings.copies, input_ids.shape[0]
        table = self.table_on(input_ids.device)
        words = smoothing.batch_words(input_ids, attention_mask, table.continuation, self.tokenizer, self.task)
        noise = self.noise(input_ids, attention_mask, words, table)  # [B * n, L] ids, or DNE's [B * n, L, M] weights
        ids = input_ids.repeat_interleave(n, 0)
        mask = attention_mask.repeat_interleave(n, 0)
        types = None if token_type_ids is None else token_type_ids.repeat_interleave(n, 0)
        outputs = []
        for start in range(0, b * n, self.settings.chunk):
            rows = slice(start, start + self.settings.chunk)
            extra = {} if types is None else {"token_type_ids": types[rows]}
            if self.settings.kind == "dne":
                extra["inputs_embeds"] = smoothing.mix_rows(self.model, ids[rows], table, noise[rows])
            else:
                extra["input_ids"] = noise[rows]
            outputs.append(self.model(attention_mask=mask[rows], **extra).logits.float())
        return combine(torch.cat(outputs).view(b, n, -1), self.settings.vote)

    def table_on(self, device: torch.device) -> smoothing.NeighbourTable:
        if device not in self._tables:
            moved = {f.name: getattr(self.table, f.name).to(device) for f in dataclasses.fields(self.table)}
            self._tables[device] = smoothing.NeighbourTable(**moved)
        return self._tables[device]

    def noise(self, input_ids, attention_mask, words: smoothing.Words, table: smoothing.NeighbourTable) -> torch.Tensor:
        """Every copy's noisy token ids (SAFER, RanMASK) or Dirichlet weights (DNE), rows grouped by input."""
        s, n = self.settings, self.settings.copies
        ids = input_ids.repeat_interleave(n, 0)
        copies = smoothing.Words(*(t.repeat_interleave(n, 0) for t in (words.word_of, words.count, words.whole)))
        generators = [row_generator(input_ids[r], attention_mask[r], s.seed) for r in range(len(input_ids))]
        if s.kind == "safer":
            uniform = per_row(generators, attention_mask, lambda g, length: torch.rand(n, length, generator=g))
            return smoothing.substitute(ids, copies, table, uniform.to(ids.device))
        if s.kind == "ranmask":
            width = max(1, int(words.count.max()))
            keys = torch.full((len(ids), width), 2.0)  # past a row's words: never chosen
            for r, g in enumerate(generators):  # a word's key depends on its row alone
                keys[r * n : (r + 1) * n, : int(words.count[r])] = torch.rand(n, int(words.count[r]), generator=g)
            masked = smoothing.masked_count(copies.count.cpu(), s.rate, s.min_keep)
            return smoothing.mask_words(ids, copies, masked, self.tokenizer.mask_token_id, keys.to(ids.device))
        return self.dne_weights(input_ids, attention_mask, words, generators, table)

    def dne_weights(self, input_ids, attention_mask, words: smoothing.Words, generators, table) -> torch.Tensor:
        """[B * n, L, M] Dirichlet weights, drawn over each row's real tokens only (padding keeps its token)."""
        s, n = self.settings, self.settings.copies
        out = torch.zeros(len(input_ids) * n, input_ids.shape[1], table.width, device=input_ids.device)
        out[..., 0] = 1.0
        for r, g in enumerate(generators):
            real = attention_mask[r].bool()
            row_words = smoothing.Words(
                words.word_of[r][real].expand(n, -1), words.count[r].expand(n), words.whole[r][real].expand(n, -1)
            )
            drawn = smoothing.dirichlet_weights(input_ids[r][real].expand(n, -1), row_words, table, s.alpha, s.decay, g)
            out[r * n : (r + 1) * n, real] = drawn
        return out


def row_generator(ids: torch.Tensor, mask: torch.Tensor, seed: int) -> torch.Generator:
    """A CPU generator seeded by the row's real tokens and `seed`: the row's noise whatever its batch or padding."""
    tokens = ids[mask.bool()].cpu().numpy().astype(np.int64).tobytes()
    return torch.Generator().manual_seed(zlib.crc32(tokens, seed & 0xFFFFFFFF))


def per_row(generators, attention_mask, draw) -> torch.Tensor:
    """[B * n, L] draws: row r's `draw(generator, its length)` scattered onto its real positions (zero on padding),
    so padding changes nothing."""
    rows = []
    for r, g in enumerate(generators):
        real = attention_mask[r].bool().cpu()
        values = draw(g, int(real.sum()))
        full = torch.zeros(values.shape[0], real.shape[0])
        full[:, real] = values
        rows.append(full)
    return torch.cat(rows)


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
