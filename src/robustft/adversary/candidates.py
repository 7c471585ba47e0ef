"""Candidate tables for the ASCC convex hull: each perturbable word's substitutes, aligned with its sub-word tokens.

ASCC and RIFT were released with a whitespace tokenizer (one vocabulary id per word), so a word's hull is
a mix of whole-word embeddings. Our encoders split words into word pieces. Our choice, documented in
docs/rift.md: **whole-word substitution, position-aligned, length-matched**. A word that occupies n tokens
takes as candidates only the substitutes that tokenise to exactly n tokens (in the same context); the
hull then mixes, at each of the n positions, the j-th token embedding of every candidate, with **one
weight vector per word** shared by its n positions. So every vertex of the hull is a real token sequence
of a real substitute text, the sequence length never changes, and argmax over a word's weights maps back
to one word. Substitutes of another length are dropped (counted in `CandidateTable.dropped`); in
counter-fitted neighbours of common words almost all candidates are single tokens.

Slot 0 of every word is the original word. Only words of the task's perturbable field move (the
hypothesis of a pair); special tokens, the other field and words without neighbours keep their token.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from robustft import resources
from robustft.data.text import is_one_word, match_case, split_words
from robustft.errors import RobustftError

DEFAULT_SLOTS = 10  # the original + up to 9 substitutes (the counter-fitted file holds up to 8)


@dataclass
class WordSlots:
    """One perturbable word of one example: its index among the field's words and its candidates by slot."""

    row: int
    word_index: int
    positions: tuple[int, ...]
    candidates: tuple[str, ...]  # slot 0 is the original word


@dataclass
class CandidateTable:
    """Everything the hull needs for one batch.

    ids[b, p, k]: the token at position p if slot k of p's word is chosen (the clean token where p is fixed).
    word_of[b, p]: index into the batch's word list of the word that owns position p, or -1 when p is fixed.
    slot_mask[b, w, k]: slot k of word w of row b is a real candidate (slot 0 always is).
    """

    ids: torch.Tensor
    word_of: torch.Tensor
    slot_mask: torch.Tensor
    words: list[list[WordSlots]] = field(default_factory=list)
    kept: int = 0
    dropped: int = 0

    @property
    def num_slots(self) -> int:
        return self.ids.shape[-1]


class CandidateBuilder:
    """Builds candidate tables for batches of one task with one tokenizer (fast tokenizers only: offsets)."""

    def __init__(self, tokenizer, task, neighbors: dict[str, list[str]] | None = None, slots: int = DEFAULT_SLOTS):
        if not getattr(tokenizer, "is_fast", False):
            raise RobustftError("the ASCC candidate tables need a fast tokenizer (character offsets)")
        if slots < 1:
            raise RobustftError("ASCC needs at least one candidate slot (the original word)")
        self.tokenizer = tokenizer
        self.task = task
        self.neighbors = neighbors if neighbors is not None else resources.counterfitted_neighbors()
        self.slots = slots
        self._pieces: dict[tuple[str, bool], tuple[int, ...]] = {}

    def pieces(self, word: str, after_space: bool) -> tuple[int, ...]:
        """The token ids of `word` on its own (BPE tokenizers mark a preceding space, WordPiece ignores it)."""
        key = (word, after_space)
        if key not in self._pieces:
            text = (" " if after_space else "") + word
            self._pieces[key] = tuple(self.tokenizer(text, add_special_tokens=False)["input_ids"])
        return self._pieces[key]

    def build(self, batch: dict) -> CandidateTable:
        examples = batch["examples"]
        input_ids = batch["input_ids"]
        width = input_ids.shape[1]
        field_name = self.task.perturb_field
        seq_of_field = 1 if (self.task.is_pair and field_name == "text_b") else 0
        a = [e.text_a for e in examples]
        b = [e.text_b for e in examples] if self.task.is_pair else None
        enc = self.tokenizer(a, b, truncation=True, max_length=width, return_offsets_mapping=True)

        ids = input_ids.unsqueeze(-1).repeat(1, 1, self.slots).cpu()
        word_of = torch.full(input_ids.shape, -1, dtype=torch.long)
        all_words: list[list[WordSlots]] = []
        kept = dropped = 0
        for row, example in enumerate(examples):
            row_ids = enc["input_ids"][row]
            if list(input_ids[row, : len(row_ids)].tolist()) != list(row_ids):
                raise RobustftError(
                    "ASCC re-tokenised an example and got other token ids than the batch: the batch "
                    "must be encoded by the same tokenizer with truncation at the batch's max length"
                )
            text = example.field(field_name)
            words, spans = split_words(text)
            owner = _positions_by_word(spans, enc["offset_mapping"][row], enc.sequence_ids(row), seq_of_field)
            row_words = []
            for w, positions in owner.items():
                start, end = spans[w]
                offsets = enc["offset_mapping"][row]
                if offsets[positions[0]][0] != start or offsets[positions[-1]][1] != end:
                    continue  # the word is cut by truncation or shares a token with its neighbour
                subs = self.neighbors.get(words[w].lower(), [])
                if not subs:
                    continue
                after_space = start > 0 and text[start - 1].isspace()
                original = tuple(row_ids[p] for p in positions)
                if self.pieces(words[w], after_space) != original:
                    continue  # context-dependent tokenisation: the standalone pieces would not line up
                candidates, skipped = self._fill(ids[row], words[w], subs, positions, after_space)
                kept, dropped = kept + len(candidates) - 1, dropped + skipped
                if len(candidates) == 1:
                    continue
                for p in positions:
                    word_of[row, p] = len(row_words)
                row_words.append(WordSlots(row, w, tuple(positions), tuple(candidates)))
            all_words.append(row_words)

        device = input_ids.device
        slot_mask = self._slot_mask(all_words).to(device)
        return CandidateTable(ids.to(device), word_of.to(device), slot_mask, all_words, kept, dropped)

    def _fill(self, row_ids: torch.Tensor, word: str, subs: list[str], positions: list[int], after_space: bool):
        """The word's candidates (itself first, then up to slots - 1 substitutes of as many tokens, written into
        their slots of `row_ids`), and how many substitutes did not fit."""
        candidates, skipped = [word], 0
        for sub in subs:
            if len(candidates) == self.slots:
                break
            new = match_case(word, sub)
            sub_ids = self.pieces(new, after_space) if is_one_word(new) else ()
            if len(sub_ids) != len(positions) or new.lower() == word.lower():
                skipped += 1
                continue
            for k_pos, p in enumerate(positions):
                row_ids[p, len(candidates)] = sub_ids[k_pos]
            candidates.append(new)
        return candidates, skipped

    def _slot_mask(self, all_words: list[list[WordSlots]]) -> torch.Tensor:
        """[examples, words, slots]: which slots hold a candidate (slot 0, the original, always)."""
        n_words = max(1, max(len(ws) for ws in all_words))
        slot_mask = torch.zeros(len(all_words), n_words, self.slots, dtype=torch.bool)
        slot_mask[:, :, 0] = True
        for row, ws in enumerate(all_words):
            for i, ws_i in enumerate(ws):
                slot_mask[row, i, : len(ws_i.candidates)] = True
        return slot_mask


def _positions_by_word(spans, offsets, sequence_ids, seq_of_field) -> dict[int, list[int]]:
    """{word index: its token positions} for the tokens of the perturbable sequence."""
    owner: dict[int, list[int]] = {}
    w = 0
    for p, (s, e) in enumerate(offsets):
        if sequence_ids[p] != seq_of_field or e <= s:
            continue
        while w < len(spans) and spans[w][1] <= s:
            w += 1
        if w < len(spans) and spans[w][0] <= s and e <= spans[w][1]:
            owner.setdefault(w, []).append(p)
    # A word whose tokens are not contiguous cannot be swapped position by position.
    return {w: ps for w, ps in owner.items() if ps == list(range(ps[0], ps[0] + len(ps)))}
