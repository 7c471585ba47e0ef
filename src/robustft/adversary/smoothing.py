"""Random word-level noise on token ids: the tensor primitives that the defenses (`robustft.defenses`: SAFER,
RanMASK, DNE) use in training and in prediction by an ensemble of noisy copies, so a model is trained on the noise
it is judged with.

TextDefender applies this noise to whitespace words of the text before tokenising. Here it works on the batch's
token ids, so the victim's and the evaluation's batches need no re-tokenising. Our choices (docs/defenses.md):

- A *word* is a word-start token and the continuation tokens after it (WordPiece's `##` pieces; for BPE and
  SentencePiece vocabularies, tokens without the word-start marker). Punctuation is then a word of its own,
  where TextDefender's whitespace split glues it to the word before. The unknown token (`[UNK]`) is a word too:
  an out-of-vocabulary substitute stays one word, which RanMASK's certificate needs.
- Substitution (SAFER, DNE) replaces a *whole-word token* (a word of one token) by a whole-word token of its
  perturbation set: counter-fitted neighbours (Jia et al.'s 8-neighbour file) that are one token in the
  vocabulary, case matched. A word of several tokens keeps its tokens (almost every counter-fitted word is one
  WordPiece token).
- Masking (RanMASK) replaces a chosen word, however many pieces it has, by ONE mask token and re-packs the row
  (TextDefender masks the whitespace word before tokenising: one mask too), so two texts that differ only in
  masked words give the same masked copy.
- Only the task's perturbable field moves (the hypothesis of a pair); special tokens and padding never do.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from robustft import resources
from robustft.adversary.embeds import field_token_mask
from robustft.data.text import match_case

WORD_START_MARKS = ("Ġ", "▁")  # byte-level BPE (RoBERTa) and SentencePiece word starts


@dataclass(frozen=True)
class NeighbourTable:
    """A vocabulary's perturbation sets: row v lists v itself, its first-order neighbours, then (second order)
    their neighbours, as token ids; rows are padded with v itself. `size[v]` entries are real, the first
    `first[v]` of them v and its own neighbours. `overlap[v]` is SAFER's q_v (`set_overlap`) over the first-order
    sets, the sets SAFER's noise draws from (1 for a word that cannot move)."""

    ids: torch.Tensor  # [V, M] long
    size: torch.Tensor  # [V] long, >= 1
    first: torch.Tensor  # [V] long, >= 1
    overlap: torch.Tensor  # [V] float
    continuation: torch.Tensor  # [V] bool: the token continues the word before it

    @property
    def width(self) -> int:
        return self.ids.shape[1]


def continuation_ids(tokenizer) -> torch.Tensor:
    """[V] bool: which token ids continue a word rather than start one (special tokens start nothing: False)."""
    tokens = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
    special = set(tokenizer.all_special_tokens)
    wordpiece = any(t.startswith("##") for t in tokens[:5000] if t)
    flags = []
    for t in tokens:
        if not t or t in special:
            flags.append(False)
        elif wordpiece:
            flags.append(t.startswith("##"))
        else:
            flags.append(not t.startswith(WORD_START_MARKS))
    return torch.tensor(flags, dtype=torch.bool)


def _surface(token: str) -> tuple[str, str]:
    """(marker, word) of a vocabulary token: 'Ġgood' -> ('Ġ', 'good'), 'good' -> ('', 'good')."""
    for mark in WORD_START_MARKS:
        if token.startswith(mark):
            return mark, token[len(mark) :]
    return "", token


def build_table(tokenizer, neighbors: dict[str, list[str]], width: int, second_order: bool) -> NeighbourTable:
    """The perturbation sets of every whole-word token of `tokenizer`, at most `width` entries (itself included)."""
    vocab = tokenizer.get_vocab()
    size_v = len(tokenizer)
    continuation = continuation_ids(tokenizer)
    special = set(tokenizer.all_special_ids)
    tokens = tokenizer.convert_ids_to_tokens(list(range(size_v)))

    def one_token(mark: str, template: str, word: str) -> int | None:
        return vocab.get(mark + match_case(template, word))

    first_sets: dict[int, list[int]] = {}
    for v, token in enumerate(tokens):
        if not token or v in special or continuation[v]:
            continue
        mark, word = _surface(token)
        if not word.isalpha():
            continue
        subs = [one_token(mark, word, n) for n in neighbors.get(word.lower(), ())]
        subs = list(dict.fromkeys(u for u in subs if u is not None and u != v))
        if subs:
            first_sets[v] = subs
    ids = torch.arange(size_v).unsqueeze(1).repeat(1, width)
    size = torch.ones(size_v, dtype=torch.long)
    first = torch.ones(size_v, dtype=torch.long)
    overlap = torch.ones(size_v)
    members: dict[int, set[int]] = {}  # first-order sets: what SAFER's noise draws from
    for v, subs in first_sets.items():
        row = [v, *subs][:width]
        first[v] = len(row)
        members[v] = set(row)
        if second_order:
            for u in subs:
                row += [w for w in first_sets.get(u, ()) if w not in row]
            row = row[:width]
        ids[v, : len(row)] = torch.tensor(row)
        size[v] = len(row)
    for v in members:
        overlap[v] = set_overlap(v, members)
    return NeighbourTable(ids, size, first, overlap, continuation)


def set_overlap(v: int, sets: dict[int, set[int]]) -> float:
    """SAFER's q_v: the least overlap of the uniform distribution on v's set with that on the set of a member u
    that may replace v, min over u of |S_v & S_u| / max(|S_v|, |S_u|) (the overlap of two uniform distributions,
    1 - their total variation). A word without a set of its own has the set {u}.

    SAFER's release divides by |S_v| alone, which overstates q when u's set is larger: "ultimate" {ultimate,
    final} got q = 1 although "final" has 9 members, of which the two sets share 2 (true overlap 2/9)."""
    own = sets.get(v, {v})
    return min(len(own & sets.get(u, {u})) / max(len(own), len(sets.get(u, {u}))) for u in own)


# the counter-fitted tables by (tokenizer, width, second order): a handful per process
_TABLES: dict[tuple, NeighbourTable] = {}


def neighbour_table(
    tokenizer, width: int = 9, second_order: bool = False, neighbors: dict[str, list[str]] | None = None
) -> NeighbourTable:
    """The table of `tokenizer` over `neighbors` (default: the counter-fitted file, built once per tokenizer and
    shape: about two seconds)."""
    if neighbors is not None:
        return build_table(tokenizer, neighbors, width, second_order)
    key = (getattr(tokenizer, "name_or_path", ""), len(tokenizer), type(tokenizer).__name__, width, second_order)
    if key not in _TABLES:
        _TABLES[key] = build_table(tokenizer, resources.counterfitted_neighbors(), width, second_order)
    return _TABLES[key]


@dataclass
class Words:
    """The word structure of a batch of token rows."""

    word_of: torch.Tensor  # [B, L] long: index of the word within its row, -1 where the token never moves
    count: torch.Tensor  # [B] long: words that may move per row
    whole: torch.Tensor  # [B, L] bool: a one-token word that may move


def batch_words(input_ids, attention_mask, continuation: torch.Tensor, tokenizer, task) -> Words:
    """Words of the perturbable field of each row (see the module's docstring for what a word is)."""
    batch = {"input_ids": input_ids, "attention_mask": attention_mask}
    movable = field_token_mask(batch, tokenizer, task, keep=tokenizer.unk_token_id).bool()
    cont = continuation.to(input_ids.device)[input_ids] & movable
    start = movable & ~cont
    word_of = torch.cumsum(start.long(), dim=1) - 1
    word_of = torch.where(movable & (word_of >= 0), word_of, torch.full_like(word_of, -1))
    next_cont = torch.zeros_like(cont)
    next_cont[:, :-1] = cont[:, 1:]
    return Words(word_of, start.sum(1), start & ~next_cont)


def substitute(input_ids: torch.Tensor, words: Words, table: NeighbourTable, uniform: torch.Tensor) -> torch.Tensor:
    """SAFER's noise: every whole-word token replaced by a uniform draw from its first-order set (itself included).
    `uniform` [B, L] in [0, 1) decides the draws."""
    ids = input_ids.clamp(0, table.ids.shape[0] - 1)
    first = table.first.to(ids.device)[ids]
    pick = (uniform * first).long().clamp_max(first - 1)
    drawn = torch.gather(table.ids.to(ids.device)[ids], -1, pick.unsqueeze(-1)).squeeze(-1)
    return torch.where(words.whole, drawn, input_ids)


def masked_count(count: torch.Tensor, rate: float, min_keep: int) -> torch.Tensor:
    """RanMASK's number of masked words: round(h * rate), but at least `min_keep` words unmasked (TextDefender's
    mask_sentence; Python's round, half to even, as there)."""
    masked = torch.tensor([round(h * rate) for h in count.tolist()], dtype=torch.long)
    return torch.minimum(masked, (count - min_keep).clamp_min(0))


def mask_words(
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    words: Words,
    masked: torch.Tensor,
    uniform: torch.Tensor,
    mask_id: int,
    pad_id: int,
    token_type_ids: torch.Tensor | None = None,
) -> dict[str, torch.Tensor]:
    """RanMASK's noise: `masked[b]` words of row b, drawn without replacement (the words with the smallest
    `uniform` [B, W] keys), each become ONE mask token, whatever their number of pieces; the rows are re-packed to
    the left and padded with `pad_id` to the longest one (attention mask and token types follow). Returns the
    model inputs {input_ids, attention_mask[, token_type_ids]}."""
    width = uniform.shape[1]
    keys = uniform.masked_fill(torch.arange(width, device=uniform.device) >= words.count.unsqueeze(1), 2.0)
    rank = keys.argsort(dim=1).argsort(dim=1)  # rank of each word's key within its row
    hidden = rank < masked.to(rank.device).unsqueeze(1)  # [B, W]
    at = words.word_of.clamp_min(0)
    chosen = torch.gather(hidden, 1, at) & (words.word_of >= 0)
    before = torch.full_like(words.word_of, -1)
    before[:, 1:] = words.word_of[:, :-1]
    later_piece = chosen & (words.word_of == before)  # a masked word's second, third ... token: dropped
    keep = attention_mask.bool() & ~later_piece
    order = torch.sort((~keep).long(), dim=1, stable=True).indices  # kept tokens first, in their order
    length = keep.sum(1)
    real = torch.arange(input_ids.shape[1], device=input_ids.device) < length.unsqueeze(1)
    ids = torch.where(chosen, torch.full_like(input_ids, mask_id), input_ids)
    ids = torch.where(real, torch.gather(ids, 1, order), torch.full_like(ids, pad_id))
    longest = max(1, int(length.max()))
    out = {"input_ids": ids[:, :longest], "attention_mask": real[:, :longest].to(attention_mask.dtype)}
    if token_type_ids is not None:
        types = torch.where(real, torch.gather(token_type_ids, 1, order), torch.zeros_like(token_type_ids))
        out["token_type_ids"] = types[:, :longest]
    return out


def dirichlet_weights(
    input_ids: torch.Tensor,
    words: Words,
    table: NeighbourTable,
    alpha: float,
    decay: float,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """DNE's weights [B, L, M] over each token's table row: Dirichlet with concentration alpha on the token and its
    first-order neighbours and alpha * decay on the second-order ones (TextDefender's DecayAlphaHull), drawn as
    normalised Gamma draws; a token that cannot move puts weight 1 on itself."""
    ids = input_ids.clamp(0, table.ids.shape[0] - 1)
    size = table.size.to(ids.device)[ids].unsqueeze(-1)
    first = table.first.to(ids.device)[ids].unsqueeze(-1)
    slot = torch.arange(table.width, device=ids.device)
    concentration = torch.where(slot < first, alpha, alpha * decay).expand(*ids.shape, table.width).contiguous()
    draws = torch._standard_gamma(concentration.cpu(), generator=generator).to(ids.device)
    draws = draws.clamp_min(1e-30).masked_fill(slot >= size, 0.0)  # slot 0 is always real: a positive sum
    weights = draws / draws.sum(-1, keepdim=True)
    still = torch.zeros_like(weights)
    still[..., 0] = 1.0
    return torch.where(words.whole.unsqueeze(-1), weights, still)


def mix_rows(model, input_ids: torch.Tensor, table: NeighbourTable, weights: torch.Tensor) -> torch.Tensor:
    """The word embeddings [B, L, H] of each token's weighted table row (DNE's convex-hull point). An embedding bag
    sums the rows without building the [B, L, M, H] tensor of every neighbour's embedding."""
    ids = input_ids.clamp(0, table.ids.shape[0] - 1)
    rows = table.ids.to(ids.device)[ids]  # [B, L, M]
    table_weight = model.get_input_embeddings().weight
    flat = F.embedding_bag(
        rows.reshape(-1, table.width),
        table_weight,
        per_sample_weights=weights.reshape(-1, table.width).to(table_weight.dtype),
        mode="sum",
    )
    return flat.view(*ids.shape, -1)
