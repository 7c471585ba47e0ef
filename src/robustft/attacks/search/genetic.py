"""Genetic search (Alzantot et al. 2018), with Jia et al. (2019)'s faster variant as the default.

Population of `population` members, each the original text perturbed once; per generation the best
member survives (elitism), the rest are children of two parents drawn with probability
softmax(score / temperature), made by uniform crossover, then perturbed once. A perturbation picks a
word position with probability proportional to its number of candidates, tries every candidate there
and keeps the best if it raises the score, else tries another position.

faster=True (Jia et al.): the candidates of each position, with every constraint (LM filter included),
are computed once on the original text; the search then only recombines them. faster=False
(Alzantot): candidates and constraints are recomputed against the current member at each perturbation.
The perturbations of a whole population are evaluated in one batch (same choices, fewer model calls
than one member at a time).

compat="textattack" reproduces TextAttack 0.3.11's AlzantotGeneticAlgorithm as its faster-alzantot
(Jia) recipe configures it, where it differs from Alzantot's code (docs/attacks.md):
- parents are drawn with probability softmax(-score / temperature) (TextAttack's sign: lower scores
  preferred), not softmax(+score / temperature);
- a word already swapped in a member is never swapped again (its weight drops to 0, RepeatModification);
- every word is drawn with weight max(#candidates, epsilon), epsilon = max(1, int(0.1 * min #candidates)),
  so words without candidates are drawn too and cost a try; a member tries at most as many draws as
  it has non-zero weights;
- candidates and constraints are recomputed on the member at each draw (no precomputation);
- crossover children are not checked against the constraints (post_crossover_check=False);
- members are perturbed and evaluated one at a time, in order;
- after the last generation the elite of the previous one is returned: a success among the last
  generation's children is not kept.

compat="rift" reproduces the RIFT release's GeneticAdversary (Jia et al.'s code; dongxinshuai/RIFT-NeurIPS2021
attack/attack_algorithms/genetic_attack.py): candidates once on the original text (faster); a perturbation
draws a position uniformly among those with a candidate and takes the best of all its choices (the original word
first, then its substitutes) whatever the member held there, no retry; parents are drawn with probability
proportional to 1 - p(true) + 1e-8 (two classes) or sigmoid(-margin) + 1e-4 (more; margin = the true logit minus
the highest other), the best choice being the lowest p(true) or margin likewise; children are not evaluated before
their perturbation; the last generation is never checked (its best elite is returned).
"""

from __future__ import annotations

import math

from robustft.attacks.attack import AttackContext, Search
from robustft.attacks.constraints.overlap import MaxWordsPerturbed
from robustft.attacks.goal import GoalResult
from robustft.attacks.words import AttackedText

COMPATS = ("alzantot", "textattack", "rift")
SELECTION = {
    "alzantot": "softmax(score/T)",
    "textattack": "softmax(-score/T)",
    "rift": "1 - p(true) + 1e-8 (two classes), sigmoid(-margin) + 1e-4 (more)",
}


class Genetic(Search):
    name = "genetic"
    # Several examples share each model call (example_loop's `concurrent`): their populations' requests go through
    # the victim in one batch; each example keeps its own rng and state (ctx), so its records do not change
    # (tests/test_genetic_batching.py; speed: docs/performance.md).

    def __init__(
        self,
        population: int = 60,
        generations: int = 40,
        temperature: float = 0.3,
        faster: bool = True,
        max_crossover_retries: int = 20,
        give_up_if_no_improvement: bool = False,
        compat: str = "alzantot",
    ):
        if compat not in COMPATS:
            raise ValueError(f"compat: expected one of {', '.join(COMPATS)}, got {compat!r}")
        if population < 2 or generations < 0:
            raise ValueError(f"population must be >= 2 and generations >= 0, got {population}, {generations}")
        self.population, self.generations, self.temperature = population, generations, temperature
        # TextAttack recomputes candidates on each member; the RIFT release computes them once
        self.faster = compat == "rift" or (faster and compat == "alzantot")
        self.max_crossover_retries = max_crossover_retries
        self.give_up, self.compat = give_up_if_no_improvement, compat

    def config(self) -> dict:
        return {
            "name": self.name,
            "compat": self.compat,
            "population": self.population,
            "generations": self.generations,
            "temperature": self.temperature,
            "faster": self.faster,
            "selection": SELECTION[self.compat],
            "post_crossover_check": self.compat == "alzantot",
            "max_crossover_retries": self.max_crossover_retries,
            "give_up_if_no_improvement": self.give_up,
        }

    # --- candidates -------------------------------------------------------------------------------
    def _swaps(self, ctx: AttackContext, text: AttackedText, i: int) -> list[AttackedText]:
        if i not in ctx.modifiable(text):
            return []
        if self.faster:
            current = text.words[i].lower()
            return [text.replace_word(i, w) for w in ctx.state["options"][i] if w != current]
        return ctx.neighbours(text, [i])[i]

    def _perturb_all(self, ctx: AttackContext, members: list[GoalResult]) -> list[GoalResult]:
        out = list(members)
        weights = [dict(ctx.state["weights"]) for _ in members]
        pending = list(range(len(members)))
        while pending and not ctx.goal.search_over:
            requests = []
            for m in pending:
                while weights[m]:
                    keys = sorted(weights[m])
                    i = ctx.rng.choices(keys, weights=[weights[m][k] for k in keys])[0]
                    texts = self._swaps(ctx, out[m].text, i)
                    if texts:
                        requests.append((m, i, texts))
                        break
                    del weights[m][i]
            if not requests:
                break
            results = ctx.goal.evaluate([t for _, _, texts in requests for t in texts])
            pending, at = [], 0
            for m, i, texts in requests:
                mine, at = results[at : at + len(texts)], at + len(texts)
                best = max(mine, key=lambda r: r.score, default=None)
                if best is not None and best.score > out[m].score:
                    out[m] = best
                else:
                    del weights[m][i]
                    pending.append(m)
        return out

    # --- crossover --------------------------------------------------------------------------------
    def _crossover(self, ctx: AttackContext, a: AttackedText, b: AttackedText) -> AttackedText:
        limits = [c for c in ctx.constraints if isinstance(c, MaxWordsPerturbed)]
        positions = sorted(a.modified | b.modified)
        for _ in range(self.max_crossover_retries + 1):
            words = {i: (a.words[i] if ctx.rng.random() < 0.5 else b.words[i]) for i in positions}
            child = ctx.original.replace_words({i: w for i, w in words.items() if w != ctx.original.words[i]})
            if all(c.filter([child], ctx.original, ctx.original) for c in limits):
                return child
        return a

    def _children(self, ctx: AttackContext, population: list[GoalResult], weights: list[float]) -> list[AttackedText]:
        """population - 1 uniform crossovers of two parents, each drawn with probability proportional to weights."""
        n = self.population - 1
        parents1 = ctx.rng.choices(range(len(population)), weights=weights, k=n)
        parents2 = ctx.rng.choices(range(len(population)), weights=weights, k=n)
        return [
            self._crossover(ctx, population[p].text, population[q].text)
            for p, q in zip(parents1, parents2, strict=True)
        ]

    def _select_probs(self, scores: list[float]) -> list[float]:
        """Parent-selection probabilities: softmax(score / T) (Alzantot's code), or TextAttack 0.3.11's
        softmax(-score / T), which prefers the weaker members."""
        sign = -1.0 if self.compat == "textattack" else 1.0
        top = max(sign * s for s in scores)
        logits = [math.exp((sign * s - top) / self.temperature) for s in scores]
        total = sum(logits)
        return [x / total for x in logits]

    def run(self, ctx: AttackContext) -> GoalResult:
        if self.compat == "textattack":
            return self._run_textattack(ctx)
        if self.compat == "rift":
            return self._run_rift(ctx)
        return self._run_alzantot(ctx)

    # --- the RIFT release (Jia et al.'s code) -----------------------------------------------------
    @staticmethod
    def _rift_badness(ctx: AttackContext, result: GoalResult) -> float:
        """What the release minimises: p(true) with two classes, else the margin (the true logit minus the
        highest other, i.e. log p(true) - log max p(other))."""
        p = result.probs.astype("float64")
        if len(p) == 2:
            return float(p[ctx.goal.label])
        other = max(v for k, v in enumerate(p) if k != ctx.goal.label)
        return math.log(max(p[ctx.goal.label], 1e-300)) - math.log(max(other, 1e-300))

    def _rift_weight(self, ctx: AttackContext, result: GoalResult) -> float:
        bad = self._rift_badness(ctx, result)
        if len(result.probs) == 2:
            return 1.0 - bad + 1e-8
        return 1.0 / (1.0 + math.exp(min(bad, 700.0))) + 1e-4

    def _rift_perturb_all(self, ctx: AttackContext, texts: list[AttackedText]) -> list[GoalResult]:
        """Each text with one uniformly drawn position set to the best of its choices (original word first)."""
        options = ctx.state["options"]
        positions = sorted(options)
        limits = [c for c in ctx.constraints if isinstance(c, MaxWordsPerturbed)]  # none in the release
        requests = []
        for text in texts:
            i = ctx.rng.choice(positions)
            choices = [text.replace_words({i: w}) for w in [ctx.original.words[i].lower(), *options[i]]]
            requests.append([t for t in choices if all(c.filter([t], ctx.original, ctx.original) for c in limits)])
        results = ctx.goal.evaluate([t for choices in requests for t in choices])
        out, at = [], 0
        for choices in requests:
            mine, at = results[at : at + len(choices)], at + len(choices)
            if len(mine) < len(choices):  # the budget ran out
                break
            out.append(min(mine, key=lambda r: self._rift_badness(ctx, r)))  # the first of equals
        return out

    def _run_rift(self, ctx: AttackContext) -> GoalResult:
        indices = ctx.modifiable(ctx.original)
        neighbours = ctx.neighbours(ctx.original, indices)
        options = {i: [t.words[i].lower() for t in texts] for i, texts in neighbours.items() if texts}
        ctx.state.update(options=options)
        if not options:
            ctx.notes.append("no position has a candidate that passes the constraints")
            return ctx.initial
        population = self._rift_perturb_all(ctx, [ctx.original] * self.population)
        elite = ctx.initial
        for _ in range(self.generations):
            if len(population) < self.population:  # the budget cut the generation short: keep its best so far
                elite = min([elite, *population], key=lambda r: self._rift_badness(ctx, r))
                break
            elite = min(population, key=lambda r: self._rift_badness(ctx, r))
            if ctx.goal.search_over or elite.succeeded:
                break
            # (the release has no cap to check after crossover; a configured max-words cap is kept as elsewhere)
            children = self._children(ctx, population, [self._rift_weight(ctx, r) for r in population])
            population = [elite, *self._rift_perturb_all(ctx, children)]
        return elite

    # --- TextAttack 0.3.11 ------------------------------------------------------------------------
    def _ta_perturb(self, ctx: AttackContext, member: GoalResult, weights: list[float]):
        """TextAttack's GeneticAlgorithm._perturb: (member, its weights) after at most one improving swap."""
        weights, tries = list(weights), list(weights)
        limit, done = sum(1 for w in tries if w > 0), 0
        positions = range(len(tries))
        while done < limit and any(w > 0 for w in tries):
            i = ctx.rng.choices(positions, weights=tries)[0]
            texts = (
                []
                if i in member.text.modified or i not in ctx.modifiable(member.text)
                else ctx.neighbours(member.text, [i])[i]
            )
            if not texts:
                done += 1
                continue
            results = ctx.goal.evaluate(texts)
            best = max(results, key=lambda r: r.score, default=None)
            if best is not None and best.score > member.score:
                weights[i] = 0
                return best, weights
            tries[i] = 0
            done += 1
            if ctx.goal.search_over:
                break
        return member, weights

    def _ta_crossover(self, ctx: AttackContext, a, b):
        """Uniform crossover without a constraint check; the child takes b's weight where it takes b's word."""
        (ra, wa), (rb, wb) = a, b
        words, weights = {}, list(wa)
        for i in range(ra.text.num_words):
            if ctx.rng.random() < 0.5:
                words[i] = rb.text.words[i]
                weights[i] = wb[i]
        child = ra.text.replace_words({i: w for i, w in words.items() if w != ra.text.words[i]})
        return child, weights

    def _run_textattack(self, ctx: AttackContext) -> GoalResult:
        original = ctx.original
        counts = [0] * original.num_words
        for i, texts in ctx.neighbours(original, ctx.modifiable(original)).items():
            counts[i] = len(texts)
        if not any(counts):
            ctx.notes.append("no position has a candidate that passes the constraints")
            return ctx.initial
        epsilon = max(1, int(min(counts) * 0.1))
        start = [max(c, epsilon) for c in counts]
        population = []
        for _ in range(self.population):
            population.append(self._ta_perturb(ctx, ctx.initial, start))
        best_score = ctx.initial.score
        for _ in range(self.generations):
            population.sort(key=lambda m: -m[0].score)
            if ctx.goal.search_over or population[0][0].succeeded:
                break
            if population[0][0].score > best_score:
                best_score = population[0][0].score
            elif self.give_up:
                break
            probs = self._select_probs([m[0].score for m in population])
            n = len(population) - 1
            parents1 = ctx.rng.choices(range(len(population)), weights=probs, k=n)
            parents2 = ctx.rng.choices(range(len(population)), weights=probs, k=n)
            children = []
            for p, q in zip(parents1, parents2, strict=True):
                text, weights = self._ta_crossover(ctx, population[p], population[q])
                evaluated = ctx.goal.evaluate([text])
                if not evaluated or ctx.goal.search_over:
                    break
                children.append(self._ta_perturb(ctx, evaluated[0], weights))
                if ctx.goal.search_over:
                    break
            population = population[:1] + children
        return population[0][0]

    # --- Alzantot's code (default) ----------------------------------------------------------------
    def _run_alzantot(self, ctx: AttackContext) -> GoalResult:
        indices = ctx.modifiable(ctx.original)
        neighbours = ctx.neighbours(ctx.original, indices)
        options = {i: [t.words[i].lower() for t in texts] for i, texts in neighbours.items() if texts}
        ctx.state.update(options=options, weights={i: len(w) for i, w in options.items()})
        if not options:
            ctx.notes.append("no position has a candidate that passes the constraints")
            return ctx.initial
        population = self._perturb_all(ctx, [ctx.initial] * self.population)
        best_score = ctx.initial.score
        for _ in range(self.generations):
            population.sort(key=lambda r: -r.score)
            if ctx.goal.search_over or population[0].succeeded:
                break
            if population[0].score > best_score:
                best_score = population[0].score
            elif self.give_up:
                break
            children = self._children(ctx, population, self._select_probs([r.score for r in population]))
            evaluated = ctx.goal.evaluate(children)
            if len(evaluated) < len(children):
                population = population[:1] + evaluated
                break
            population = population[:1] + self._perturb_all(ctx, evaluated)
        return max(population, key=lambda r: r.score)
