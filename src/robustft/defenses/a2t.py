"""A2T (Yoo and Qi, Findings of EMNLP 2021; TextAttack's `a2t_yoo_2021` recipe): adversarial training on the
examples of a cheap word-substitution attack run inside the loop against the current model. This class owns the
attack, which rows of a batch it attacks and how their loss mixes with the clean one (`mix`); the objective
(`robustft.training.objectives.a2t`) only computes the cross-entropies. The trained model predicts by itself.

The attack is white-box and runs on the batch's tokens, so it is built from the adversary layer's pieces (not the
text-level engine of `robustft.attacks`): sub-word-aligned counter-fitted candidates (`CandidateBuilder`: a swap
changes token ids in place) and the embedding forward; all candidates of a step go through the model in one
forward. Where it differs from the recipe (docs/defenses.md, "A2T"):
- Word importance: L1 norm of the word's mean token gradient of the loss w.r.t. the word embeddings (GreedyWordSwapWIR
  "gradient"), words visited once in that order. Deviation: eval mode and the true label (TextAttack's `get_grad`:
  train mode, dropout on, the label predicted under it: the true label on every row the search attacks, in eval).
- Candidates: Jia et al.'s counter-fitted 8-neighbour file (A2T: 20 counter-fitted embedding neighbours, cosine >=
  0.8), only those of the word's number of sub-word tokens (TextAttack: any, the text re-tokenised).
- Constraints: no NLTK English stopword (TextAttack's default `StopwordModification()`; compared lower-cased, TextAttack
  as written), no word twice, at most max(ceil(10% of the field's words), 4) changed (MaxModificationRate 0.1,
  min_threshold 4), sentence cosine >= 0.9 to the original (A2T: stsb-distilbert-base; here all-MiniLM-L6-v2
  mean-pooled; 0 switches it off). No part-of-speech constraint (no tagger in the loop).
- Greedy step: the candidate that most lowers the true-class probability replaces the word if it lowers it, until the
  first flip (success) or the word budget is spent. At a flip, TextAttack's rule: among the candidates that flip,
  ranked by score up to the first that does not, the most similar to the original (best-scoring: similarity off).

Mixes (B rows in a batch): "textattack" (default; TextAttack's Trainer, which A2T used) attacks rows in a random
order until ceil(share * B) attacks succeed (or every row was tried), loss (sum CE(clean) + alpha * sum CE(adv)) /
(B + k) over the k successes (TextAttack: ceil(share * N) successes of the training set concatenated with it, each
batch's loss the mean of its rows' CE, adversarial ones times alpha); "batch-means" (ours before) attacks a random
ceil(share * B) rows, loss CE(clean mean) + alpha * CE(adversarial mean). Deviation (both): TextAttack attacks the
training set once before each epoch, here every batch (the examples follow the model as it trains).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from robustft import resources
from robustft.adversary.candidates import DEFAULT_SLOTS, CandidateBuilder, CandidateTable, WordSlots
from robustft.adversary.embeds import forward_embeds, word_embeddings
from robustft.data.batching import model_inputs
from robustft.data.text import split_words
from robustft.errors import ConfigError
from robustft.models.im import adversary_gradients

MIXES = ("textattack", "batch-means")  # see the module's docstring


@dataclass(frozen=True)
class A2TSettings:
    max_rate: float = 0.1  # MaxModificationRate(max_rate=0.1, ...)
    min_words: int = 4  # ... min_threshold=4
    similarity: float = 0.9  # BERT sentence encoder cosine >= 0.9 (0: off)
    share: float = 0.2  # A2T's attacked share (TextAttack's num_train_adv_examples)
    alpha: float = 1.0  # TextAttack Trainer's weight of an adversarial row
    mix: str = "textattack"
    slots: int = DEFAULT_SLOTS  # candidate slots per word (the original included)
    im_adversary_grad: str = "exact"  # the word-importance gradient on an IM model (docs/im_bert.md)

    def __post_init__(self):
        if self.mix not in MIXES:
            raise ConfigError(f"method_args.mix: expected one of {', '.join(MIXES)}, got {self.mix!r}")


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


class A2T:
    """A2T for one tokenizer and task. `encoder`: texts -> unit vectors [n, d] (None: all-MiniLM-L6-v2 on `device`)."""

    name = "a2t"
    definition = None  # no certificate

    def __init__(self, settings: A2TSettings, tokenizer, task, neighbors=None, encoder=None, device="cpu"):
        self.settings = settings
        self.builder = CandidateBuilder(tokenizer, task, neighbors, slots=settings.slots)
        if encoder is None and settings.similarity > 0:
            from robustft.models.sentence import SentenceEncoder

            encoder = SentenceEncoder("minilm", device)
        self.encoder = encoder
        self.stopwords = resources.stopwords()  # NLTK's English list: TextAttack's StopwordModification()

    def adversarial_rows(self, model, batch: dict) -> tuple[dict, torch.Tensor, int]:
        """Inputs and labels of the batch's successful adversarial rows (collected as `mix` says); rows attacked."""
        order = torch.randperm(len(batch["labels"])).tolist()
        wanted = math.ceil(self.settings.share * len(order))
        if self.settings.mix == "batch-means":
            return self._collect(model, batch, order[:wanted], None)
        return self._collect(model, batch, order, wanted)

    def mixed_loss(self, clean: torch.Tensor, adversarial: torch.Tensor, rows: int) -> torch.Tensor:
        """The loss from the clean rows' mean CE over `rows` rows and the adversarial rows' CEs (one per row)."""
        if self.settings.mix == "batch-means":
            return clean + self.settings.alpha * adversarial.mean()
        return (clean * rows + self.settings.alpha * adversarial.sum()) / (rows + len(adversarial))

    def _collect(self, model, batch, order: list[int], wanted: int | None) -> tuple[dict, torch.Tensor, int]:
        """wanted None: attack the rows of `order` at once; else attack them in that order, as few at a time as are
        still wanted, until `wanted` attacks have succeeded or `order` is spent (the first successes kept)."""
        parts, attacked, found = [], 0, 0
        while attacked < len(order) and (wanted is None or found < wanted):
            size = len(order) - attacked if wanted is None else wanted - found
            part = rows_of(batch, order[attacked : attacked + size])
            attacked += len(part["examples"])
            with adversary_gradients(model, self.settings.im_adversary_grad):
                outcome = self.attack(model, part)
            won = outcome.success.nonzero().flatten().tolist()
            if wanted is not None:
                won = won[: wanted - found]  # one round asks for no more than it still needs
            found += len(won)
            if won:
                inputs = {k: v[won] for k, v in model_inputs(part).items()}
                inputs["input_ids"] = outcome.input_ids[won]
                parts.append((inputs, part["labels"][won]))
        if not parts:
            return {}, batch["labels"][:0], attacked
        inputs = {k: torch.cat([p[k] for p, _ in parts]) for k in parts[0][0]}
        return inputs, torch.cat([y for _, y in parts]), attacked

    def attack(self, model, batch: dict) -> Outcome:
        """The batched A2T search on every row of `batch`."""
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


def rows_of(batch: dict, rows: list[int]) -> dict:
    """The batch restricted to `rows` (tensors indexed, examples picked)."""
    index = torch.tensor(rows, device=batch["input_ids"].device)
    out = {k: v.index_select(0, index.to(v.device)) for k, v in batch.items() if isinstance(v, torch.Tensor)}
    out["examples"] = [batch["examples"][r] for r in rows]
    return out
