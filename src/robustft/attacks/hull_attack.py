"""The white-box ASCC attack (RIFT's evaluation) as a recipe: `build_attack("ascc", victim)`.

Per example, the convex-hull search of `robustft.adversary.hull` with gain = cross-entropy of the true
label (minimising -CE), then argmax of each word's weights to a discrete word, and the model's verdict on
the discrete text through the victim. Same interface as the black-box attacks (`run(example, index,
seed) -> AttackRecord`, `config()`, `resources()`, `field`), so it streams through `example_loop.run_attack` with
per-example JSONL and resume.

Records follow TextAttack's outcomes: an example the model already gets wrong is skipped; succeeded
when the discrete text flips the prediction, failed otherwise. Queries: the clean call, one per hull
step (a forward and backward pass each) and the discrete check (+1 for the fp32 re-check of a success
found under bf16/fp16), in both units. Each example's starting logits come from a generator seeded by
(seed, index), so a record depends neither on the batch nor on the run order.
"""

from __future__ import annotations

import torch

from robustft import resources, runtime
from robustft.adversary.candidates import CandidateBuilder
from robustft.adversary.hull import HullSettings, ce_gain, kaiming_logits, optimise_weights
from robustft.attacks.results import FAILED, SKIPPED, SUCCEEDED, AttackRecord
from robustft.attacks.victim import AttackTimeout, Victim
from robustft.attacks.view import TextView
from robustft.attacks.words import AttackedText
from robustft.clock import working_seconds
from robustft.data.batching import model_inputs, tokenize_pad
from robustft.data.example import Example
from robustft.errors import ConfigError


class AsccAttack:
    recipe = "ascc"

    def __init__(self, victim: Victim, settings: dict, neighbors: dict[str, list[str]] | None = None):
        self.victim, self.settings = victim, settings
        self.field = victim.task.perturb_field
        self.hull = HullSettings(
            settings["steps"],
            settings["lr"],
            settings["weight_decay"],
            settings["entropy_weight"],
            settings["entropy_norm"],
        )
        self.custom_neighbors = neighbors is not None
        self.builder = CandidateBuilder(victim.tokenizer, victim.task, neighbors, slots=settings["slots"])
        self.time_limit = settings.get("time_limit_s")
        self.recheck = settings.get("recheck_full_precision", True)
        self.pair_words = settings.get("pair_words", "joint")
        if settings.get("query_budget") is not None or settings.get("query_budget_per_word") is not None:
            raise ConfigError(
                "the white-box ascc attack spends a fixed number of queries (steps + 2): it takes no query budget"
            )

    def config(self) -> dict:
        return {
            "recipe": self.recipe,
            "settings": self.settings,
            "perturb_field": self.field,
            "neighbours": "custom" if self.custom_neighbors else "counterfitted",
            "slots": self.builder.slots,
            "hull": self.hull.__dict__,
            "gain": "cross-entropy of the true label",
            "victim": {
                "max_length": self.victim.max_length,
                "precision": self.victim.precision,
                "ran_in": self.victim.concrete_precision,
            },
        }

    def resources(self) -> dict[str, str]:
        if self.custom_neighbors:
            return {}
        return {"counterfitted_neighbors": str(resources.data_file(resources.COUNTERFITTED))}

    def _batch(self, example: Example) -> dict:
        victim = self.victim
        enc = tokenize_pad(
            victim.tokenizer,
            [example.text_a],
            [example.text_b] if victim.task.is_pair else None,
            max_length=victim.max_length,
        )
        batch = runtime.to_device(model_inputs(enc), victim.device)
        batch["labels"] = torch.tensor([example.label], device=victim.device)
        batch["examples"] = [example]
        return batch

    def run(self, example: Example, index: int = 0, seed: int = 0) -> AttackRecord:
        start = working_seconds()
        victim = self.victim
        victim.reset(None, self.time_limit)
        text = example.field(self.field)
        view = TextView.of(example, self.field, self.pair_words)
        record = AttackRecord(
            index=index,
            id=example.id,
            label=example.label,
            result=FAILED,
            original=text,
            adversarial=text,
            perturbed_field=self.field,
            context=example.field(view.other) if example.is_pair else None,
            num_words=AttackedText(view.text()).num_words,
        )
        try:
            clean = victim.probs([example])[0]
            record.original_pred = record.adversarial_pred = int(clean.argmax())
            record.original_probs = record.adversarial_probs = [round(float(p), 6) for p in clean]
            if record.original_pred != example.label:
                record.result, reason = SKIPPED, "original prediction already wrong"
                return self._finish(record, reason, start)
            batch = self._batch(example)
            table = self.builder.build(batch)
            if not table.words[0]:
                return self._finish(record, "no word has a substitute of its token length", start)
            n_words = len(table.words[0])
            generator = torch.Generator().manual_seed(seed * 1_000_003 + index)
            init = torch.zeros(table.slot_mask.shape)
            init[0, :n_words] = kaiming_logits((1, n_words, table.num_slots), generator)[0]
            weights = optimise_weights(victim.model, batch, table, ce_gain(batch["labels"]), self.hull, init=init)
            victim.count_extra(self.hull.steps)
            victim.check_time()
            choice = weights.argmax(-1)[0].tolist()
            adv = AttackedText(text).replace_words(
                {w.word_index: w.candidates[choice[i]] for i, w in enumerate(table.words[0]) if choice[i] > 0}
            )
            adv_example = example.with_field(self.field, adv.text)
            probs = victim.probs([adv_example])[0]
        except AttackTimeout:
            return self._finish(record, f"time limit of {self.time_limit} s reached", start)
        record.adversarial, record.swaps = adv.text, adv.swaps()
        record.adversarial_pred, record.adversarial_probs = int(probs.argmax()), [round(float(p), 6) for p in probs]
        reason = f"{n_words} words could move"
        if record.adversarial_pred != example.label and self.recheck and victim.concrete_precision != "fp32":
            probs = victim.full_precision_probs(adv_example)
            record.adversarial_pred, record.adversarial_probs = int(probs.argmax()), [round(float(p), 6) for p in probs]
            reason += (
                "; success re-checked in fp32"
                if record.adversarial_pred != example.label
                else f"; success under {victim.concrete_precision} not confirmed in fp32"
            )
        record.result = SUCCEEDED if record.adversarial_pred != example.label else FAILED
        return self._finish(record, reason, start)

    def _finish(self, record: AttackRecord, reason: str, start: float) -> AttackRecord:
        record.queries, record.distinct_queries = self.victim.queries, self.victim.distinct_queries
        record.reason = reason
        record.seconds = round(working_seconds() - start, 4)
        self.victim.deadline = None
        return record
