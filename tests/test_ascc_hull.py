"""The ASCC adversary: candidate tables aligned with word pieces, and the convex-hull search."""

import pytest
import torch

from robustft.adversary.candidates import CandidateBuilder
from robustft.adversary.embeds import field_token_mask, forward_embeds, word_embeddings
from robustft.adversary.hull import (
    HullSettings,
    adversarial_embeddings,
    candidate_embeddings,
    kl_gain,
    mix,
    optimise_weights,
)
from robustft.data.batching import collate, encode, model_inputs
from robustft.data.example import Example
from robustft.data.tasks import get_task
from robustft.models.factory import tiny_bert

NEIGHBORS = {
    "good": ["great", "fine", "nice", "decent"],
    "movie": ["film", "picture", "cinematographic"],
    "man": ["guy", "fellow"],
    "runs": ["sprints", "jogs"],
    "sleeps": ["naps"],
}


@pytest.fixture(scope="module")
def tiny():
    return tiny_bert(3, seed=0)


def batch_of(tok, examples, max_length=64):
    return collate(encode(tok, examples, max_length), tok.pad_token_id)


def test_weights_stay_on_the_simplex_and_mask_padded_slots(tiny):
    model, tok = tiny
    examples = [Example("a good movie", 1), Example("the man runs fast", 0)]
    batch = batch_of(tok, examples)
    table = CandidateBuilder(tok, get_task("sst2"), NEIGHBORS).build(batch)
    weights = optimise_weights(
        model, batch, table, kl_gain(model(input_ids=batch["input_ids"]).logits), HullSettings(steps=3)
    )
    assert torch.allclose(weights.sum(-1), torch.ones(weights.shape[:2]), atol=1e-6)
    assert (weights >= 0).all()
    assert (weights[~table.slot_mask] < 1e-30).all()
    assert table.slot_mask[:, :, 0].all()


def test_one_candidate_per_word_gives_the_clean_input(tiny):
    model, tok = tiny
    batch = batch_of(tok, [Example("a good movie", 1), Example("the man runs", 0)])
    sst2 = get_task("sst2")
    for builder in (CandidateBuilder(tok, sst2, {}), CandidateBuilder(tok, sst2, NEIGHBORS, slots=1)):
        table = builder.build(batch)
        weights = optimise_weights(model, batch, table, kl_gain(torch.zeros(2, 3)), HullSettings(steps=2))
        adv = adversarial_embeddings(model, table, weights)
        assert torch.equal(adv, word_embeddings(model, batch))
        assert torch.allclose(forward_embeds(model, batch, adv), model(**model_inputs(batch)).logits, atol=1e-6)


def test_candidates_are_whole_words_aligned_with_their_word_pieces(tiny):
    _, tok = tiny
    neighbors = {"movie": ["film", "cinematographic", "picture"]}
    batch = batch_of(tok, [Example("A Movie, truly.", 1)])
    table = CandidateBuilder(tok, get_task("sst2"), neighbors).build(batch)
    (word,) = table.words[0]
    assert word.candidates[0] == "Movie"
    assert all(c[0].isupper() for c in word.candidates)  # case follows the original word
    for slot, cand in enumerate(word.candidates):
        pieces = tok(cand, add_special_tokens=False)["input_ids"]
        assert [int(table.ids[0, p, slot]) for p in word.positions] == pieces
    # a substitute with another number of word pieces cannot be aligned position by position: dropped
    long_pieces = len(tok("cinematographic", add_special_tokens=False)["input_ids"])
    assert long_pieces != len(word.positions) and "Cinematographic" not in word.candidates
    assert table.dropped == 1 and table.kept == 2
    assert set(table.word_of[0].tolist()) == {-1, 0}


def test_multi_piece_words_share_one_weight_vector(tiny):
    model, tok = tiny
    pieces = len(tok("unwatchable", add_special_tokens=False)["input_ids"])
    same_length = [
        w
        for w in ("unbearable", "unlistenable", "insufferable", "unendurable")
        if len(tok(w, add_special_tokens=False)["input_ids"]) == pieces
    ]
    assert pieces > 1 and same_length
    batch = batch_of(tok, [Example("an unwatchable film", 0)])
    table = CandidateBuilder(tok, get_task("sst2"), {"unwatchable": same_length}).build(batch)
    (word,) = table.words[0]
    assert len(word.positions) == pieces
    assert (table.word_of[0, list(word.positions)] == 0).all()
    weights = torch.zeros_like(table.slot_mask, dtype=torch.float)
    weights[0, 0, 1] = 1.0  # pick the first substitute: every piece of the word moves together
    adv = mix(candidate_embeddings(model, table), table, weights)
    sub_ids = tok(same_length[0], add_special_tokens=False)["input_ids"]
    expected = model.get_input_embeddings()(torch.tensor(sub_ids))
    assert torch.allclose(adv[0, list(word.positions)], expected)


def test_pairs_move_only_the_perturbable_field(tiny):
    model, tok = tiny
    task = get_task("snli")
    assert task.perturb_field == "text_b"
    examples = [Example("a good man sleeps", 0, "a good man runs"), Example("the movie", 1, "a man sleeps")]
    batch = batch_of(tok, examples)
    table = CandidateBuilder(tok, task, NEIGHBORS).build(batch)
    enc = tok([e.text_a for e in examples], [e.text_b for e in examples])
    for row in range(2):
        seq = enc.sequence_ids(row)
        moving = [p for p in range(len(seq)) if table.word_of[row, p] >= 0]
        assert moving and all(seq[p] == 1 for p in moving)
    assert all(w.candidates[0] in examples[w.row].text_b.split() for ws in table.words for w in ws)
    clean = model(**model_inputs(batch)).logits
    weights = optimise_weights(model, batch, table, kl_gain(clean), HullSettings(steps=3))
    adv = adversarial_embeddings(model, table, weights)
    changed = (adv - word_embeddings(model, batch)).abs().sum(-1) > 0
    hypothesis = field_token_mask(batch, tok, task).bool()
    assert changed.any() and not (changed & ~hypothesis).any()


def test_field_mask_for_pairs_and_single_texts(tiny):
    _, tok = tiny
    pair = batch_of(tok, [Example("a b", 0, "c d e")])
    assert field_token_mask(pair, tok, get_task("snli"))[0].tolist() == [0, 0, 0, 0, 1, 1, 1, 0]
    single = batch_of(tok, [Example("a b", 0), Example("c", 1)])
    assert field_token_mask(single, tok, get_task("sst2")).tolist() == [[0, 1, 1, 0], [0, 1, 0, 0]]


def test_batch_tokenised_differently_is_refused(tiny):
    _, tok = tiny
    batch = batch_of(tok, [Example("a good movie", 1)])
    batch["input_ids"][0, 1] = 999
    with pytest.raises(Exception, match="other token ids"):
        CandidateBuilder(tok, get_task("sst2"), NEIGHBORS).build(batch)


def _dropout_model():
    return tiny_bert(2, seed=0, hidden_dropout_prob=0.3, attention_probs_dropout_prob=0.3)


@pytest.mark.parametrize("method, target_mode", [("rift", "eval"), ("ascc", "train")])
def test_hull_target_and_search_mode_follow_the_release(method, target_mode, monkeypatch):
    """RIFT's release: p_clean in eval mode under no_grad, search in eval mode. TextDefender's ASCC: p_clean
    from a separate no-grad forward in training mode (dropout on), search in training mode."""
    import robustft.training.objectives.ascc as ascc_module
    from robustft.training.objectives import build_objective
    from robustft.training.objectives.base import TrainContext

    model, tok = _dropout_model()
    batch = batch_of(tok, [Example("a good movie", 1), Example("the man runs", 0)])
    objective = build_objective(method, {"teacher": "copy", "steps": 2} if method == "rift" else {"steps": 2})
    objective.neighbors = NEIGHBORS
    objective.setup(model, TrainContext(tok, get_task("sst2"), "tiny"))
    targets, modes = [], []
    real_gain = ascc_module.kl_gain
    monkeypatch.setattr(ascc_module, "kl_gain", lambda logits: targets.append(logits) or real_gain(logits))
    handle = model.register_forward_hook(lambda m, args, out: modes.append(m.training))
    model.train()
    objective.loss(model, batch)
    handle.remove()
    (target,) = targets
    assert not target.requires_grad
    model.eval()
    with torch.no_grad():
        eval_logits = model(**model_inputs(batch)).logits
    assert torch.allclose(target, eval_logits, atol=1e-6) == (target_mode == "eval")
    search_modes = modes[1 : 1 + 2 + 1]  # after the training forward: the target forward and the search steps
    assert set(search_modes) == {target_mode == "train"}, modes


def test_entropy_normalisation_options(tiny):
    from robustft.adversary.hull import entropy_normaliser
    from robustft.errors import ConfigError
    from robustft.training.objectives import build_objective

    model, tok = tiny
    batch = batch_of(tok, [Example("a good movie", 1), Example("the man runs fast", 0)])
    table = CandidateBuilder(tok, get_task("sst2"), NEIGHBORS).build(batch)
    assert entropy_normaliser("tokens", table) == batch["input_ids"].numel()  # TextDefender: B x L positions
    movable = sum(len(words) for words in table.words)
    assert movable >= 3 and entropy_normaliser("words", table) == movable == entropy_normaliser(None, table)
    assert entropy_normaliser(300 * 128, table) == 38400  # RIFT's release
    assert build_objective("ascc").hull.entropy_norm == "tokens"
    assert build_objective("rift").hull.entropy_norm == 300 * 128
    with pytest.raises(ConfigError):
        HullSettings(entropy_norm="sentences")
