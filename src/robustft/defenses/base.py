"""What every ensemble defense owns: its perturbation sets, its noise (one copy per row for training, `copies` per
row for the ensemble), how a copy enters the classifier, and its certificate (none for a defense without one)."""

from __future__ import annotations

import dataclasses

import torch

from robustft.adversary import smoothing
from robustft.defenses.settings import EnsembleSettings
from robustft.errors import ConfigError


class Defense:
    """One defense under `settings` for one tokenizer and task. Subclasses set `name` and the noise."""

    name = ""
    second_order = False  # the table's rows hold the neighbours' neighbours too (DNE)
    definition: str | None = None  # what its certificate guarantees (None: no certificate)

    def __init__(self, settings: EnsembleSettings, tokenizer, task, neighbors: dict[str, list[str]] | None = None):
        if settings.kind != self.name:
            raise ConfigError(f"{type(self).__name__} got the settings of a {settings.kind!r} ensemble")
        self.settings, self.tokenizer, self.task = settings, tokenizer, task
        # neighbors None: the counter-fitted file (cached per tokenizer); tests may inject a small dict
        self.table = smoothing.neighbour_table(tokenizer, self.table_width(), self.second_order, neighbors)
        self._tables = {torch.device("cpu"): self.table}  # the table on each device it was used on, moved once

    def table_width(self) -> int:
        return 9  # the token and its 8 counter-fitted neighbours

    def with_settings(self, settings: EnsembleSettings) -> Defense:
        other = object.__new__(type(self))
        other.__dict__.update(self.__dict__)
        other.settings = settings
        return other

    def table_on(self, device: torch.device) -> smoothing.NeighbourTable:
        if device not in self._tables:
            moved = {f.name: getattr(self.table, f.name).to(device) for f in dataclasses.fields(self.table)}
            self._tables[device] = smoothing.NeighbourTable(**moved)
        return self._tables[device]

    def words(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> smoothing.Words:
        table = self.table_on(input_ids.device)
        return smoothing.batch_words(input_ids, attention_mask, table.continuation, self.tokenizer, self.task)

    def training_copy(self, batch: dict) -> dict:
        """One noisy copy of every row (torch's global random state), as the classifier's inputs."""
        raise NotImplementedError

    def copies(self, input_ids, attention_mask, token_type_ids, words: smoothing.Words, generators) -> dict:
        """`settings.copies` noisy copies of every row (rows grouped by input; row r's draws come from
        `generators[r]`), as tensors with B * copies rows that `model_inputs` turns into the classifier's inputs."""
        raise NotImplementedError

    def model_inputs(self, model, rows: dict) -> dict:
        """The classifier's keyword inputs for some rows of `copies`' output."""
        return rows

    # the certificate (`robustft eval --certify`); see robustft.evaluation.certify for p
    def certificate(self, p: float, input_ids: list[int]) -> dict:
        """One example's verdict from p, the lower bound of its true label's vote share."""
        raise ConfigError(f"the {self.name} defense has no certificate")

    @staticmethod
    def certified_accuracy(certs: list[dict], figure) -> dict:
        """metrics.json's certified figures from the examples' certificates; `figure(flags)` makes one accuracy
        with its interval (the evaluation's statistics)."""
        raise NotImplementedError


def repeat_words(words: smoothing.Words, n: int) -> smoothing.Words:
    """The word structure of every row repeated n times (one per copy)."""
    return smoothing.Words(*(t.repeat_interleave(n, 0) for t in (words.word_of, words.count, words.whole)))


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
