"""The genetic attack's LM-filter scorer: the project's masked-LM pseudo-log-likelihood, cached per window."""

import pytest

from robustft.attacks.constraints.lm_filter import MaskedLMPseudoLogLikelihood
from robustft.models import mlm


@pytest.mark.slow
def test_scorer_prefers_the_fluent_window_and_caches_scores():
    model, tok = mlm.load_masked_lm("minilm")
    scorer = MaskedLMPseudoLogLikelihood(model, tok, source=model.mlm_source)
    texts = ["the movie was great fun .", "the movie was great fork ."]
    fluent, odd = scorer(texts)
    assert fluent > odd
    assert list(scorer(texts[::-1])) == [odd, fluent]  # from the cache, same values
    assert [fluent, odd] == pytest.approx(mlm.pseudo_log_likelihood(model, tok, texts, precision="fp32"))
    assert "robustft MLM head" in scorer.name  # the run records which scorer ran
