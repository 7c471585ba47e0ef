"""A2T's cheap word-substitution attack (Yoo and Qi, Findings of EMNLP 2021; TextAttack's `a2t_yoo_2021` recipe), for
adversarial training inside the loop.

Why here and not in `robustft.attacks`: training and attacks sit side by side and never import each other. The
attack engine is black-box and text-level (a victim that re-tokenises every candidate text); A2T's search is
white-box (gradient word importance) and runs on the training batch's tokens. So it is built from the adversary
layer's pieces: the counter-fitted candidates aligned with sub-word tokens (`CandidateBuilder`: whole-word,
length-matched substitutes, so a swap is a change of token ids in place) and the embedding forward. Every candidate
of every attacked row of a step goes through the model in one forward.

The recipe, and where this one differs (docs/defenses.md, "A2T"):
- Word importance: the gradient of the loss w.r.t. the word embeddings, L1 norm of the word's mean token gradient
  (TextAttack's GreedyWordSwapWIR "gradient"); words visited once in that order. Deviation: the model in eval mode
  and the true label; TextAttack's `get_grad` runs the model in train mode (dropout on) and takes the label the
  model predicts under that dropout (equal to the true label on every row the search attacks, in eval mode).
- Candidates: counter-fitted neighbours (A2T: 20 nearest counter-fitted embeddings with cosine >= 0.8; offline, Jia
  et al.'s 8-neighbour file, so at most 8 and no cosine check), only those of the word's number of sub-word tokens
  (TextAttack: any, the text re-tokenised).
- Constraints: no stopword (NLTK's English list, TextAttack's default `StopwordModification()`; compared lower-cased,
  TextAttack as written), no word twice, at most max(ceil(10% of the field's words), 4) words changed
  (MaxModificationRate 0.1, min_threshold 4), sentence similarity >= 0.9 to the original (A2T: stsb-distilbert-base
  cosine; here all-MiniLM-L6-v2 mean-pooled cosine, another sentence-transformers encoder; 0 switches it off).
  A2T's part-of-speech constraint is not applied (no tagger in the loop).
- Greedy step: the candidate that most lowers the true-class probability replaces the word if it lowers it; the
  search stops at the first flip (success) or when the word budget is spent. At a flip, TextAttack's rule picks the
  swap: among the candidates that flip, ranked by score up to the first that does not, the most similar to the
  original (the best-scoring where the similarity is off).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from robustft import resources
from robustft.adversary.candidates import CandidateBuilder, CandidateTable, WordSlots
from robustft.adversary.embeds import forward_embeds, word_embeddings
from robustft.data.batching import model_inputs
from robustft.data.text import split_words


@dataclass(frozen=True)
class A2TSettings:
    max_rate: float = 0.1  # MaxModificationRate(max_rate=0.1, ...)
    min_words: int = 4  # ... min_threshold=4
    similarity: float = 0.9  # BERT sentence encoder cosine >= 0.9 (0: off)


@dataclass
class Outcome:
    input_ids: torch.Tensor  # [B, L] the adversarial rows (the clean row where nothing changed)
    success: torch.Tensor  # [B] bool: the prediction flipped
    changed: list[int]  # words changed per row


def word_importance(model, batch: dict, table: CandidateTable) -> list[list[float]]:
    """Each candidate word's importance: the L1 norm of the mean over its tokens of d loss / d word embedding."""
    embeds = word_embeddings(model, batch).detach().requires_grad_()
    with torch.enable_grad():
        loss = F.cross_entropy(forward_embeds(model, batch, embeds).float(), batch["labels"], reduction="sum")
        (grad,) = torch.autograd.grad(loss, embeds)
    return [[float(grad[ws.row, list(ws.positions)].mean(0).abs().sum()) for ws in row] for row in table.words]


def substituted(text: str, spans, subs: dict[int, str]) -> str:
    """`text` with the words at the given indices replaced."""
    out, last = [], 0
    for index in sorted(subs):
        start, end = spans[index]
        out += [text[last:start], subs[index]]
        last = end
    return "".join(out + [text[last:]])


class A2TAttack:
    """Batched A2T search over a training batch (see the module's docstring)."""

    def __init__(self, builder: CandidateBuilder, settings: A2TSettings, encoder=None):
        self.builder = builder
        self.settings = settings
        self.encoder = encoder  # texts -> unit vectors [n, d]; needed when settings.similarity > 0
        self.stopwords = resources.stopwords()  # NLTK's English list: TextAttack's StopwordModification()

    def __call__(self, model, batch: dict) -> Outcome:
        was_training = model.training
        model.eval()  # TextAttack's queries run in eval mode; its importance gradient in train mode (deviation)
        try:
            table = self.builder.build(batch)
            importance = word_importance(model, batch, table)
            with torch.no_grad():
                return self._search(model, batch, table, importance)
        finally:
            model.train(was_training)

    def _plan(self, batch: dict, table: CandidateTable, importance) -> tuple[list[list[WordSlots]], list[int]]:
        """Each row's candidate words in decreasing importance (stopwords left out), and its word budget."""
        field = self.builder.task.perturb_field
        orders, budgets = [], []
        for row, words in enumerate(table.words):
            n_words = len(split_words(batch["examples"][row].field(field))[0])
            budgets.append(max(math.ceil(n_words * self.settings.max_rate), self.settings.min_words))
            ranked = sorted(range(len(words)), key=lambda i: -importance[row][i])
            orders.append([words[i] for i in ranked if words[i].candidates[0].lower() not in self.stopwords])
        return orders, budgets

    def _search(self, model, batch: dict, table: CandidateTable, importance) -> Outcome:
        ids = batch["input_ids"].clone()
        labels = batch["labels"]
        rows_b = len(ids)
        probs = model(**model_inputs(batch)).logits.float().softmax(-1)
        p_true = probs[torch.arange(rows_b), labels].tolist()
        done = (probs.argmax(-1) != labels).cpu()  # already wrong: skipped, as TextAttack does
        success = torch.zeros(rows_b, dtype=torch.bool)
        orders, budgets = self._plan(batch, table, importance)
        subs: list[dict[int, str]] = [{} for _ in range(rows_b)]
        for step in range(max((len(o) for o in orders), default=0)):
            active = [b for b in range(rows_b) if not done[b] and step < len(orders[b]) and len(subs[b]) < budgets[b]]
            candidates = [(b, k) for b in active for k in range(1, len(orders[b][step].candidates))]
            candidates, cosine = self._similar(batch, orders, subs, step, candidates)
            if not candidates:
                continue
            rows = torch.stack([self._swap(ids[b], table, orders[b][step], k) for b, k in candidates])
            index = torch.tensor([b for b, _ in candidates], device=ids.device)
            inputs = {k: v[index] for k, v in model_inputs(batch).items() if k != "input_ids"}
            probs = model(input_ids=rows, **inputs).logits.float().softmax(-1)
            cand_true = probs[torch.arange(len(candidates)), labels[index]].tolist()
            flips = (probs.argmax(-1) != labels[index]).tolist()
            for b in active:
                # this row's candidates by score (1 - p(true)), ties in candidate order (TextAttack's stable sort)
                mine = sorted((i for i, (r, _) in enumerate(candidates) if r == b), key=lambda i: cand_true[i])
                if not mine or cand_true[mine[0]] >= p_true[b]:
                    continue
                best = mine[0]
                leading = list(itertools.takewhile(flips.__getitem__, mine))
                if leading:  # TextAttack: the most similar of the leading successes (first on ties)
                    best = max(leading, key=cosine.__getitem__)
                    done[b] = success[b] = True
                ids[b], p_true[b] = rows[best], cand_true[best]
                ws = orders[b][step]
                subs[b][ws.word_index] = ws.candidates[candidates[best][1]]
        return Outcome(ids, success, [len(s) for s in subs])

    @staticmethod
    def _swap(row_ids: torch.Tensor, table: CandidateTable, ws: WordSlots, slot: int) -> torch.Tensor:
        new = row_ids.clone()
        positions = list(ws.positions)
        new[positions] = table.ids[ws.row, positions, slot]
        return new

    def _similar(self, batch, orders, subs, step, candidates) -> tuple[list, list[float]]:
        """The candidates whose text stays within the sentence-similarity threshold of the original field, and
        their cosines (all 1.0 where the similarity is off: the best-scoring success is then kept)."""
        if self.settings.similarity <= 0 or not candidates:
            return candidates, [1.0] * len(candidates)
        field = self.builder.task.perturb_field
        originals, texts = [], []
        for b, k in candidates:
            text = batch["examples"][b].field(field)
            ws = orders[b][step]
            originals.append(text)
            texts.append(substituted(text, split_words(text)[1], {**subs[b], ws.word_index: ws.candidates[k]}))
        vectors = self.encoder(list(dict.fromkeys(originals + texts)))
        where = {t: i for i, t in enumerate(dict.fromkeys(originals + texts))}
        cosine = [float(vectors[where[o]] @ vectors[where[t]]) for o, t in zip(originals, texts, strict=True)]
        kept = [(c, cos) for c, cos in zip(candidates, cosine, strict=True) if cos >= self.settings.similarity]
        return [c for c, _ in kept], [cos for _, cos in kept]
