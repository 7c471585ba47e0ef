"""The genetic attack's LM filter: its two masked-LM scorers (the window's pseudo-log-likelihood and the swapped
word's log-probability), cached per item, and the filter's accept/reject rule on real sentences."""

import numpy as np
import pytest

from robustft.attacks.constraints.lm_filter import (
    LanguageModelFilter,
    MaskedLMPseudoLogLikelihood,
    MaskedLMWordLogProb,
)
from robustft.attacks.words import AttackedText
from robustft.errors import ConfigError
from robustft.models import mlm
from robustft.models.factory import tiny_bert_mlm


class CountingScorer(MaskedLMWordLogProb):
    def __init__(self, model, tok):
        super().__init__(model, tok)
        self.scored = 0

    def score(self, items):
        self.scored += len(items)
        return super().score(items)


def test_filter_compares_each_swap_with_the_original_window_and_caches():
    model, tok = tiny_bert_mlm(seed=0)
    scorer = CountingScorer(model, tok)
    text = AttackedText("the film , in short , was good and the cast was fun")
    swaps = [text.replace_word(5, w) for w in ("fine", "nice", "great")]  # "good"; words leave out the commas
    base = scorer([LanguageModelFilter._item(text, 5, 0, 11)])[0]
    new = scorer([LanguageModelFilter._item(s, 5, 0, 11) for s in swaps])
    lenient = LanguageModelFilter(scorer, window=6, max_drop=1e9).filter(swaps, text, text)
    assert lenient == swaps  # any drop allowed
    threshold = base - sorted(new)[1]  # keeps exactly the swaps that drop the score by at most this
    kept = LanguageModelFilter(scorer, window=6, max_drop=threshold + 1e-9).filter(swaps, text, text)
    assert kept == [s for s, v in zip(swaps, new, strict=True) if v >= base - threshold - 1e-9] and len(kept) == 2
    assert scorer.scored == 4  # the original window and the three swaps, each scored once despite three filters


def test_a_pairs_window_stays_within_the_perturbed_sentence():
    seen = []

    def scorer(items):
        seen.extend(text for text, _ in items)
        return np.zeros(len(items))

    pair = AttackedText("two dogs run in a field\na dog is outside")  # premise, line break, hypothesis
    swap = pair.replace_word(7, "hound")  # the hypothesis's "dog"
    assert LanguageModelFilter(scorer, window=6, window_scope="line").filter([swap], pair, pair) == [swap]
    assert seen == ["a dog is outside", "a hound is outside"]  # not "... in a field\na dog ..."
    seen.clear()
    LanguageModelFilter(scorer, window=6).filter([swap], pair, pair)  # the default, TextAttack's: across the pair
    assert seen[0] == "dogs run in a field\na dog is outside"
    single = AttackedText("two dogs run in a field and a dog is outside")
    seen.clear()
    LanguageModelFilter(scorer, window=6).filter([single.replace_word(8, "hound")], single, single)
    assert seen[0] == "run in a field and a dog is outside"  # six words either side


@pytest.mark.slow
def test_both_scorers_prefer_the_fluent_word_on_the_shipped_masked_lm():
    model, tok = mlm.load_masked_lm("minilm")
    text = AttackedText("the movie was great fun .")
    for cls in (MaskedLMPseudoLogLikelihood, MaskedLMWordLogProb):
        scorer = cls(model, tok, source=model.mlm_source)
        items = [LanguageModelFilter._item(t, 4, 0, 5) for t in (text, text.replace_word(4, "fork"))]
        fluent, odd = scorer(items)
        assert fluent > odd, cls.kind
        assert list(scorer(items[::-1])) == [odd, fluent]  # from the cache, same values
        assert cls.kind in scorer.name and "robustft MLM head" in scorer.name  # the run records what ran
    pll = MaskedLMPseudoLogLikelihood(model, tok)
    texts = ["the movie was great fun .", "the movie was great fork ."]
    assert list(pll([(t, (0, 0)) for t in texts])) == pytest.approx(
        mlm.pseudo_log_likelihood(model, tok, texts, precision="fp32")
    )


def test_scorer_precision_is_used_recorded_and_checked():
    model, tok = tiny_bert_mlm(seed=0)
    items = [("the film was good and the cast was fun", (13, 17)), ("the film was fine and the cast was fun", (13, 17))]
    for cls in (MaskedLMPseudoLogLikelihood, MaskedLMWordLogProb):
        full, half = cls(model, tok), cls(model, tok, precision="bf16")
        assert "bf16" in half.name and "bf16" not in full.name  # the run's config says which precision scored
        exact, reduced = full(items), half(items)
        assert list(reduced) == pytest.approx(list(exact), abs=0.5) and list(reduced) != list(exact)
    with pytest.raises(ConfigError, match="precision"):
        MaskedLMPseudoLogLikelihood(model, tok, precision="int4")
