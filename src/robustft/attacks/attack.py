"""An attack = goal function + transformation + constraints + search; `Attack.run` attacks one example.

The search sees an `AttackContext`: the original text, the goal function (all model calls), which
positions may change, and `neighbours(text, indices)` = the transformation's candidates as texts that
pass every constraint. Inputs the search cannot work on (no words, nothing modifiable) fail with a
reason instead of raising.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field

from robustft.attacks.constraints.base import Constraint
from robustft.attacks.constraints.similarity import SentenceSimilarity
from robustft.attacks.goal import GoalResult, UntargetedClassification
from robustft.attacks.results import FAILED, SKIPPED, SUCCEEDED, AttackRecord
from robustft.attacks.transformations.base import Transformation
from robustft.attacks.victim import Victim
from robustft.attacks.words import AttackedText, is_one_word
from robustft.data.example import Example
from robustft.errors import ConfigError


@dataclass
class AttackContext:
    original: AttackedText
    goal: UntargetedClassification
    transformation: Transformation
    constraints: list[Constraint]
    rng: random.Random
    initial: GoalResult | None = None
    notes: list[str] = field(default_factory=list)

    def modifiable(self, text: AttackedText) -> list[int]:
        allowed = set(range(text.num_words))
        for c in self.constraints:
            m = c.modifiable(text)
            if m is not None:
                allowed &= m
        return sorted(allowed)

    def neighbours(self, text: AttackedText, indices: list[int]) -> dict[int, list[AttackedText]]:
        """{index: texts with that word swapped that pass every constraint}, in the transformation's order."""
        words = self.transformation.candidates(text, indices)
        texts: list[AttackedText] = []
        for i in indices:
            current = text.words[i].lower()
            for w in words.get(i, []):
                if w.lower() != current and is_one_word(w):
                    texts.append(text.replace_word(i, w))
        for c in self.constraints:
            if not texts:
                break
            texts = c.filter(texts, text, self.original)
        out: dict[int, list[AttackedText]] = {i: [] for i in indices}
        for t in texts:
            out[next(iter(t.last_modified))].append(t)
        return out

    def similarity(self, text: AttackedText) -> float:
        """The last similarity a sentence-similarity constraint measured for `text` (or -inf)."""
        for c in self.constraints:
            if isinstance(c, SentenceSimilarity) and text.text in c.last_scores:
                return c.last_scores[text.text]
        return float("-inf")


class Search:
    name = "search"

    def run(self, ctx: AttackContext) -> GoalResult:
        raise NotImplementedError

    def config(self) -> dict:
        return {"name": self.name}


class Attack:
    """Attacks examples one by one; `run` returns an `AttackRecord`. `config()` names every part and constant."""

    def __init__(self, recipe: str, victim: Victim, transformation: Transformation, constraints: list[Constraint],
                 search: Search, query_budget_per_word: float | None = None, query_budget: int | None = None,
                 settings: dict | None = None):
        self.recipe, self.victim = recipe, victim
        self.transformation, self.constraints, self.search = transformation, constraints, search
        self.query_budget_per_word, self.query_budget = query_budget_per_word, query_budget
        self.field = victim.task.perturb_field
        self.settings = settings or {}
        if (query_budget is not None and query_budget < 1) or (query_budget_per_word is not None
                                                              and query_budget_per_word <= 0):
            raise ConfigError("a query budget must allow at least one query (the original text)")

    def config(self) -> dict:
        return {"recipe": self.recipe, "settings": self.settings, "perturb_field": self.field,
                "transformation": self.transformation.config(),
                "constraints": [c.config() for c in self.constraints], "search": self.search.config(),
                "query_budget": self.query_budget, "query_budget_per_word": self.query_budget_per_word,
                "victim": {"max_length": self.victim.max_length, "batch_size": self.victim.batch_size,
                           "bf16": self.victim.bf16}}

    def resources(self) -> dict[str, str]:
        files = dict(self.transformation.resources())
        for c in self.constraints:
            files.update(c.resources())
        return files

    def _budget(self, num_words: int) -> int | None:
        budgets = [b for b in (self.query_budget,
                               None if self.query_budget_per_word is None
                               else max(1, int(self.query_budget_per_word * num_words))) if b is not None]
        return min(budgets) if budgets else None

    def run(self, example: Example, index: int = 0, seed: int = 0) -> AttackRecord:
        start = time.perf_counter()
        original = AttackedText(example.field(self.field))
        self.victim.reset(self._budget(original.num_words))
        goal = UntargetedClassification(self.victim, example, self.field)
        record = AttackRecord(index=index, id=example.id, label=example.label, result=FAILED,
                              original=original.text, adversarial=original.text, perturbed_field=self.field,
                              context=example.text_a if self.field == "text_b" else None,
                              num_words=original.num_words)
        notes = []
        n_tokens = self.victim.token_length(example)
        if n_tokens > self.victim.max_length:
            notes.append(f"input truncated: {n_tokens} tokens > max {self.victim.max_length}")
        initial = goal.evaluate([original])[0]
        record.original_pred = record.adversarial_pred = initial.pred
        record.original_probs = record.adversarial_probs = [round(float(p), 6) for p in initial.probs]
        if initial.succeeded:
            record.result, notes = SKIPPED, ["original prediction already wrong"] + notes
        else:
            # Seed from (run seed, example index) so a resumed run repeats exactly what a full run does.
            rng = random.Random(seed * 1_000_003 + index)
            ctx = AttackContext(original, goal, self.transformation, self.constraints, rng, initial)
            if original.num_words == 0:
                best, why = initial, "no words to perturb"
            elif not ctx.modifiable(original):
                best, why = initial, "no modifiable words (all stopwords or excluded)"
            else:
                best = self.search.run(ctx)
                why = "query budget exhausted" if goal.search_over and not best.succeeded else "search exhausted"
            record.adversarial = best.text.text
            record.adversarial_pred = best.pred
            record.adversarial_probs = [round(float(p), 6) for p in best.probs]
            record.swaps = best.text.swaps()
            if best.succeeded:
                record.result = SUCCEEDED
            else:
                record.result, notes = FAILED, [why] + ctx.notes + notes
        record.queries = self.victim.queries
        record.reason = "; ".join(notes)
        record.seconds = round(time.perf_counter() - start, 4)
        return record
