"""DNE, the Dirichlet neighbourhood ensemble (Zhou et al., ACL 2021): every one-token word's embedding replaced by
a Dirichlet-weighted point of the hull of its neighbours and theirs (`smoothing.dirichlet_weights`), prediction by
an ensemble of 12 such samples. It has no certificate. Its training adversary (ascent on the weights) is
`robustft.adversary.dne`."""

from __future__ import annotations

import torch

from robustft.adversary import smoothing
from robustft.defenses.base import Defense


class DNE(Defense):
    name = "dne"
    second_order = True

    def table_width(self) -> int:
        return self.settings.neighbours

    def copies(self, input_ids, attention_mask, token_type_ids, words, generators) -> dict:
        """Each copy's token ids and its [L, M] Dirichlet weights, drawn over the row's real tokens only (padding
        keeps its token)."""
        s, n = self.settings, self.settings.copies
        table = self.table_on(input_ids.device)
        weights = torch.zeros(len(input_ids) * n, input_ids.shape[1], table.width, device=input_ids.device)
        weights[..., 0] = 1.0
        for r, g in enumerate(generators):
            real = attention_mask[r].bool()
            row_words = smoothing.Words(
                words.word_of[r][real].expand(n, -1), words.count[r].expand(n), words.whole[r][real].expand(n, -1)
            )
            drawn = smoothing.dirichlet_weights(input_ids[r][real].expand(n, -1), row_words, table, s.alpha, s.decay, g)
            weights[r * n : (r + 1) * n, real] = drawn
        rows = {
            "input_ids": input_ids.repeat_interleave(n, 0),
            "attention_mask": attention_mask.repeat_interleave(n, 0),
        }
        if token_type_ids is not None:
            rows["token_type_ids"] = token_type_ids.repeat_interleave(n, 0)
        return rows | {"weights": weights}

    def model_inputs(self, model, rows: dict) -> dict:
        out = {k: v for k, v in rows.items() if k not in ("input_ids", "weights")}
        table = self.table_on(rows["input_ids"].device)
        return out | {"inputs_embeds": smoothing.mix_rows(model, rows["input_ids"], table, rows["weights"])}
