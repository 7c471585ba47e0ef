"""An attack = goal function + transformation + constraints + search; `Attack.run` attacks one example.

The search sees an `AttackContext`: the original text, the goal function (all model calls), which
positions may change, and `neighbours(text, indices)` = the transformation's candidates as texts that
pass every constraint. Inputs the search cannot work on (no words, nothing modifiable) fail with a
reason instead of raising.

What is attacked is a `TextView` of the example (a pair's premise and hypothesis as one text under the
default joint accounting, see view.py); positions in `AttackContext.fixed` (a pair's frozen part, words
past the model's truncation point) are never modifiable, so no query is spent on them. An example over
its time limit, or whose bf16/fp16 success an fp32 call does not confirm, is recorded as failed with
the reason.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from robustft.attacks.constraints.base import Constraint
from robustft.attacks.constraints.similarity import SentenceSimilarity
from robustft.attacks.goal import GoalResult, UntargetedClassification
from robustft.attacks.results import FAILED, SKIPPED, SUCCEEDED, AttackRecord
from robustft.attacks.transformations.base import Transformation
from robustft.attacks.victim import BUDGET_UNITS, AttackTimeout, Victim
from robustft.attacks.view import TextView
from robustft.attacks.words import AttackedText, is_substitute
from robustft.clock import working_seconds
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
    fixed: frozenset[int] = frozenset()  # never modifiable: a pair's frozen part, words past truncation
    state: dict = field(default_factory=dict)  # the search's own per-example state: searches serve several threads

    def modifiable(self, text: AttackedText) -> list[int]:
        allowed = set(range(text.num_words)) - self.fixed
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
                if w.lower() != current and is_substitute(w):
                    texts.append(text.replace_word(i, w))
        for c in self.constraints:
            if not texts:
                break
            self.goal.victim.check_time()
            texts = c.filter(texts, text, self.original)
        out: dict[int, list[AttackedText]] = {i: [] for i in indices}
        for t in texts:
            out[min(t.last_modified)].append(t)  # a split word's first half (split_spaces) is its index
        return out

    def similarity(self, text: AttackedText) -> float:
        """The similarity the last sentence-similarity constraint measured for `text` (or -inf); as in
        TextAttack, where each such constraint overwrites the text's `similarity_score`."""
        for c in reversed(self.constraints):
            if isinstance(c, SentenceSimilarity) and text.text in c.last_scores:
                return c.last_scores[text.text]
        return float("-inf")


class Search:
    name = "search"
    shares_calls = True  # worth attacking several examples at once, sharing model calls (example_loop's `concurrent`)

    def run(self, ctx: AttackContext) -> GoalResult:
        raise NotImplementedError

    def config(self) -> dict:
        return {"name": self.name}


class Attack:
    """Attacks examples one by one; `run` returns an `AttackRecord`. `config()` names every part and constant.

    Engine settings (every recipe has them, see `recipes.common.ENGINE_DEFAULTS`): query_budget and
    query_budget_per_word in the unit query_budget_unit names; pair_words ("joint" or "perturbed");
    time_limit_s per example; recheck_full_precision of every success found under bf16/fp16.
    """

    @property
    def shares_calls(self) -> bool:
        """Whether several threads run it at once, one example each (example_loop.run_attack's `concurrent`)."""
        return self.search.shares_calls

    def __init__(
        self,
        recipe: str,
        victim: Victim,
        transformation: Transformation,
        constraints: list[Constraint],
        search: Search,
        settings: dict | None = None,
        goal=UntargetedClassification,  # (victim, view) -> goal function: the class, or a partial of one
    ):
        self.recipe, self.victim, self.goal = recipe, victim, goal
        self.transformation, self.constraints, self.search = transformation, constraints, search
        self.settings = settings or {}
        get = self.settings.get
        self.query_budget_per_word, self.query_budget = get("query_budget_per_word"), get("query_budget")
        self.pair_words = get("pair_words", "joint")
        self.time_limit = get("time_limit_s")
        self.recheck = get("recheck_full_precision", True)
        self.skip_truncated = get("skip_truncated_words", True)
        self.field = victim.task.perturb_field
        for key, value, kind in (
            ("query_budget", self.query_budget, int),
            ("query_budget_per_word", self.query_budget_per_word, (int, float)),
            ("time_limit_s", self.time_limit, (int, float)),
        ):
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, kind) or not math.isfinite(value) or value <= 0
            ):
                raise ConfigError(
                    f"{key}: must be a positive {'integer' if kind is int else 'number'} or None "
                    f"(a query budget allows at least the original text), got {value!r}"
                )
        victim.budget_unit = get("query_budget_unit", "textattack")
        if victim.budget_unit not in BUDGET_UNITS:
            raise ConfigError(
                f"query_budget_unit: expected one of {', '.join(BUDGET_UNITS)}, got '{victim.budget_unit}'"
            )
        TextView.of(Example("", 0), self.field, self.pair_words)  # validates pair_words

    def config(self) -> dict:
        return {
            "recipe": self.recipe,
            "settings": self.settings,
            "perturb_field": self.field,
            "transformation": self.transformation.config(),
            "constraints": [c.config() for c in self.constraints],
            "search": self.search.config(),
            # the default goal is left out, so the run hashes of every recipe stay what they were
            **({} if self.goal is UntargetedClassification else {"goal": repr(self.goal)}),
            "query_budget": self.query_budget,
            "query_budget_per_word": self.query_budget_per_word,
            "query_budget_unit": self.victim.budget_unit,
            "pair_words": self.pair_words,
            "victim": {
                "max_length": self.victim.max_length,
                "batch_size": self.victim.batch_size,
                "precision": self.victim.precision,
                "ran_in": self.victim.concrete_precision,
            },
        }

    def resources(self) -> dict[str, str]:
        files = dict(self.transformation.resources())
        for c in self.constraints:
            files.update(c.resources())
        return files

    def _budget(self, num_words: int) -> int | None:
        budgets = [
            b
            for b in (
                self.query_budget,
                None if self.query_budget_per_word is None else max(1, int(self.query_budget_per_word * num_words)),
            )
            if b is not None
        ]
        return min(budgets) if budgets else None

    def _fixed(self, example: Example, view: TextView, original: AttackedText) -> tuple[set[int], str | None]:
        """Words no query is spent on: a pair's frozen part and words the model never reads (truncated)."""
        fixed = view.frozen(original)
        visible = self.victim.visible_chars(example, self.field) if self.skip_truncated else None
        if visible is None:
            return fixed, None
        cut = view.field_start + visible
        past = {i for i, (s, _) in enumerate(original.spans) if s >= cut} - fixed
        return fixed | past, f"{len(past)} words past the truncation point not attacked" if past else None

    def run(self, example: Example, index: int = 0, seed: int = 0) -> AttackRecord:
        start = working_seconds()
        view = TextView.of(example, self.field, self.pair_words)
        # TextBugger's inserted_space=split: TextAttack's way, the halves of a split word are two words
        original = AttackedText(view.text(), split_spaces=self.settings.get("inserted_space") == "split")
        self.victim.reset(self._budget(original.num_words), self.time_limit, order=index)
        goal = self.goal(self.victim, view)
        record, notes = self._new_record(example, index, view, original), []
        n_tokens = self.victim.token_length(example)
        if n_tokens > self.victim.max_length:
            notes.append(f"input truncated: {n_tokens} tokens > max {self.victim.max_length}")
        try:
            initial = goal.evaluate([original])[0]
        except AttackTimeout:
            return self._timed_out(record, notes, start)
        record.original_pred = record.adversarial_pred = initial.pred
        record.original_probs = record.adversarial_probs = _rounded(initial.probs)
        if initial.succeeded:
            record.result, notes = SKIPPED, ["original prediction already wrong"] + notes
            return self._finish(record, notes, start)
        # Seed from (run seed, example index) so a resumed run repeats exactly what a full run does.
        rng = random.Random(seed * 1_000_003 + index)
        fixed, truncation_note = self._fixed(example, view, original)
        if truncation_note:
            notes.append(truncation_note)
        transformation = self.transformation.seeded(rng)  # random character edits draw from the example's seed
        ctx = AttackContext(original, goal, transformation, self.constraints, rng, initial, fixed=frozenset(fixed))
        try:
            if original.num_words == len(view.frozen(original)):  # the perturbed field has no word
                best, why = initial, "no words to perturb"
            elif not ctx.modifiable(original):
                best, why = initial, "no modifiable words (all stopwords or excluded)"
            else:
                best = self.search.run(ctx)
                why = "query budget exhausted" if goal.search_over and not best.succeeded else "search exhausted"
        except AttackTimeout:
            return self._timed_out(record, notes, start)
        record.adversarial = view.field_text(best.text.text)
        record.adversarial_pred = best.pred
        record.adversarial_probs = _rounded(best.probs)
        offset = view.words_before_field(best.text)
        record.swaps = [{**s, "index": s["index"] - offset} for s in best.text.swaps()]
        if best.succeeded and self.recheck and self.victim.concrete_precision != "fp32":
            probs = self.victim.full_precision_probs(view.to_example(best.text.text))
            if int(probs.argmax()) == example.label:
                return self._attack_again_in_fp32(example, index, seed, start)
            record.adversarial_probs, record.adversarial_pred = _rounded(probs), int(probs.argmax())
            notes.append("success re-checked in fp32")
        if best.succeeded:
            record.result = SUCCEEDED
        else:
            record.result, notes = FAILED, [why] + ctx.notes + notes
        return self._finish(record, notes, start)

    def _new_record(self, example: Example, index: int, view: TextView, original: AttackedText) -> AttackRecord:
        """The example's record before the attack: failed, the text unchanged."""
        return AttackRecord(
            index=index,
            id=example.id,
            label=example.label,
            result=FAILED,
            original=example.field(self.field),
            adversarial=example.field(self.field),
            perturbed_field=self.field,
            context=example.field(view.other) if example.is_pair else None,
            num_words=original.num_words,
        )

    def _attack_again_in_fp32(self, example: Example, index: int, seed: int, start: float) -> AttackRecord:
        """A success the reduced precision found but fp32 does not confirm: the whole example is attacked again in
        fp32, so its outcome is the fp32 attack's (recording it as failed would bias reduced-precision runs
        towards robustness; 5 of 1,000 SST-2 examples each for PWWS and TextFooler in bf16 here)."""
        first = self.victim.concrete_precision
        spent = self.victim.queries
        with self.victim.in_precision("fp32"):
            record = self.run(example, index, seed)
        note = f"success under {first} not confirmed in fp32: attacked again in fp32 ({spent} queries under {first})"
        record.reason = "; ".join(filter(None, [note, record.reason]))
        record.seconds = round(working_seconds() - start, 4)
        return record

    def _timed_out(self, record: AttackRecord, notes: list[str], start: float) -> AttackRecord:
        record.result = FAILED
        return self._finish(record, [f"time limit of {self.time_limit} s reached"] + notes, start)

    def _finish(self, record: AttackRecord, notes: list[str], start: float) -> AttackRecord:
        record.queries, record.distinct_queries = self.victim.queries, self.victim.distinct_queries
        record.reason = "; ".join(notes)
        record.seconds = round(working_seconds() - start, 4)
        self.victim.deadline = None
        return record


def _rounded(probs) -> list[float]:
    return [round(float(p), 6) for p in probs]
