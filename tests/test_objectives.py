"""Every training objective fits a tiny model to a small separable task, and the embedding adversaries
keep their promises (masks, norms, FreeLB's averaged gradient)."""

import pytest
import torch

from robustft.adversary.embedding_delta import DeltaSettings, ascend, ce_gain, init_delta, step_delta
from robustft.adversary.embeds import forward_embeds, word_embeddings
from robustft.data.batching import collate, encode
from robustft.data.example import Example
from robustft.data.tasks import get_task
from robustft.models.factory import tiny_bert
from robustft.models.predict import accuracy
from robustft.training.objectives import OBJECTIVES, build_objective
from robustft.training.objectives.base import TrainContext

NEIGHBORS = {"film": ["movie", "picture"], "plot": ["story", "storyline"], "was": ["is"], "the": ["this"]}
POSITIVE, NEGATIVE = ["good", "great", "nice", "fine"], ["bad", "awful", "poor", "dull"]
TEMPLATES = ["the film was {}", "the plot was {}", "{} film", "a {} plot"]
# Embedding norms near 1.6, like a pre-trained BERT's (~1-1.5): with the default 0.02 init a tiny model's
# embeddings are so short that FreeLB/PGD's fixed-size steps would drown the signal.
INIT_RANGE = 0.2
# Fewer hull steps keep the test short; the adversary's own tests are in test_ascc_hull.py.
METHOD_ARGS = {
    "rift": {"teacher": "copy", "steps": 3},
    "rift-imdb": {"teacher": "copy", "steps": 3},
    "rift-snli": {"teacher": "copy", "steps": 3},
    "ascc": {"steps": 3},
}


EXAMPLES = [
    Example(t.format(w), label) for t in TEMPLATES for label, words in ((1, POSITIVE), (0, NEGATIVE)) for w in words
]


def sentiment_batch(tok):
    return collate(encode(tok, EXAMPLES, 32), tok.pad_token_id)


@pytest.mark.parametrize("method", sorted(OBJECTIVES))
def test_every_objective_fits_a_separable_task(method):
    torch.manual_seed(0)
    model, tok = tiny_bert(2, seed=0, initializer_range=INIT_RANGE)
    batch = sentiment_batch(tok)
    objective = build_objective(method, METHOD_ARGS.get(method))
    objective.neighbors = NEIGHBORS  # hull objectives read this instead of the counter-fitted file
    objective.setup(model, TrainContext(tok, get_task("sst2"), "tiny"))
    params = list(model.parameters()) + [p for m in objective.modules().values() for p in m.parameters()]
    optimizer = torch.optim.Adam(params, lr=3e-3)
    first = None
    for _ in range(50):
        model.train()
        optimizer.zero_grad(set_to_none=True)
        loss, logs = objective.loss(model, batch)
        loss.backward()
        optimizer.step()
        first = first if first is not None else loss.item()
        assert all(v == v for v in logs.values())  # no NaN in the logs
    assert loss.item() < first
    assert accuracy(model, tok, EXAMPLES, max_length=32, precision="fp32")["accuracy"] == 1.0


def freelb_by_repeated_backward(model, batch, steps):
    """FreeLB as its authors wrote it: backward at each of the K steps, gradients accumulating in .grad."""
    s = DeltaSettings(steps=steps)
    mask = batch["attention_mask"].float()
    with torch.no_grad():
        delta = init_delta(word_embeddings(model, batch), mask, s)
    total = 0.0
    for _ in range(steps):
        delta.requires_grad_()
        loss = (
            torch.nn.functional.cross_entropy(
                forward_embeds(model, batch, word_embeddings(model, batch) + delta).float(), batch["labels"]
            )
            / steps
        )
        loss.backward()
        total += loss.item()
        delta = step_delta(delta.detach(), delta.grad, mask, s)
    return total


@pytest.mark.parametrize("method", ["freelb", "freelbpp"])
def test_freelb_returns_the_sum_of_its_steps_and_leaves_backward_to_the_loop(method):
    model, tok = tiny_bert(2, seed=1)
    batch = sentiment_batch(tok)
    torch.manual_seed(5)
    reference_loss = freelb_by_repeated_backward(model, batch, 3)
    reference = [p.grad.clone() for p in model.parameters()]
    for accumulate in ("graph", "grads"):
        model.zero_grad(set_to_none=True)
        objective = build_objective(method, {"steps": 3, "accumulate": accumulate})
        torch.manual_seed(5)
        loss, logs = objective.loss(model, batch)
        assert all(p.grad is None for p in model.parameters())  # loss() never calls backward
        assert loss.item() == pytest.approx(reference_loss, rel=1e-5) and logs["adv_ce"] == pytest.approx(loss.item())
        (loss / 2).backward()  # the loop's scaling for gradient accumulation reaches every step
        for got, want in zip((p.grad for p in model.parameters()), reference, strict=True):
            assert torch.allclose(2 * got, want, atol=1e-6), accumulate


def test_inner_adversary_leaves_parameter_gradients_alone():
    model, tok = tiny_bert(2, seed=2)
    batch = sentiment_batch(tok)
    model.zero_grad(set_to_none=True)
    embeds = word_embeddings(model, batch)
    ascend(model, batch, embeds, batch["attention_mask"].float(), ce_gain(batch["labels"]), DeltaSettings(steps=2))
    assert all(p.grad is None for p in model.parameters())


def test_delta_stays_in_mask_and_norm_ball():
    torch.manual_seed(0)
    embeds = torch.randn(3, 7, 16)
    mask = torch.ones(3, 7)
    mask[:, 5:] = 0
    s = DeltaSettings(steps=1, lr=1.0, init_mag=0.5, max_norm=0.2)
    delta = init_delta(embeds, mask, s)
    assert (delta[:, 5:] == 0).all()
    delta = step_delta(delta, torch.randn_like(embeds), mask, s)
    assert (delta.flatten(1).norm(dim=1) <= 0.2 + 1e-6).all() and (delta[:, 5:] == 0).all()
    linf = DeltaSettings(steps=1, lr=1.0, init_mag=0.5, max_norm=0.1, norm="linf")
    delta = step_delta(init_delta(embeds, mask, linf), torch.randn_like(embeds), mask, linf)
    assert delta.abs().max() <= 0.1 + 1e-7 and (delta[:, 5:] == 0).all()


def test_field_scope_moves_only_the_hypothesis():
    model, tok = tiny_bert(3, seed=0)
    task = get_task("snli")
    batch = collate(encode(tok, [Example("a man sleeps", 0, "the man runs")], 32), tok.pad_token_id)
    objective = build_objective("pgd", {"scope": "field", "steps": 2})
    objective.setup(model, TrainContext(tok, task, "tiny"))
    embeds = word_embeddings(model, batch).detach()
    delta = ascend(model, batch, embeds, objective.perturb_mask(batch), ce_gain(batch["labels"]), objective.settings)
    moved = delta.abs().sum(-1)[0] > 0
    sequence = tok("a man sleeps", "the man runs").sequence_ids()
    assert moved.any() and all(sequence[p] == 1 for p in range(len(sequence)) if moved[p])
    assert forward_embeds(model, batch, embeds + delta).shape == (1, 3)


def test_unknown_options_are_config_errors():
    from robustft.errors import ConfigError

    with pytest.raises(ConfigError):
        build_objective("pgd", {"norm": "l1"})
    for removed in ("inside", "later"):  # "inside" called backward within loss(): gone
        with pytest.raises(ConfigError):
            build_objective("freelb", {"accumulate": removed})
    with pytest.raises(ConfigError):
        build_objective("rift", {"no_such_option": 1})


@pytest.mark.parametrize("method", sorted(OBJECTIVES))
@pytest.mark.parametrize("training", [True, False])
def test_loss_leaves_gradients_and_modes_alone(method, training):
    """loss() returns a loss: it never fills .grad (the loop's backward does) and restores the model's mode."""
    model, tok = tiny_bert(2, seed=0)
    objective = build_objective(method, METHOD_ARGS.get(method))
    objective.neighbors = NEIGHBORS
    objective.setup(model, TrainContext(tok, get_task("sst2"), "tiny"))
    model.train(training)
    loss, _ = objective.loss(model, sentiment_batch(tok))
    extra = [p for m in objective.modules().values() for p in m.parameters()]
    assert all(p.grad is None for p in [*model.parameters(), *extra])
    assert all(m.training == training for m in model.modules())
    assert loss.requires_grad and torch.isfinite(loss)


def test_infobert_anchored_positions_and_bottleneck():
    from robustft.training.objectives.infobert import anchored_positions, information_bottleneck

    grad = torch.zeros(2, 6, 4)
    grad[0, :, 0] = torch.tensor([5.0, 1.0, 4.0, 2.0, 3.0, 9.0])  # 5 real tokens; position 5 is padding
    grad[1, :, 0] = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    mask = torch.tensor([[1, 1, 1, 1, 1, 0], [1, 1, 1, 1, 1, 1]])
    # n = 5: ranks ceil(2.5)=3 .. ceil(4.5)=5 of the ascending order 1,3,4,2,0 -> positions 2, 0
    # n = 6: ranks 3 .. 6 (exclusive, ceil(5.4)=6) -> positions 3, 4, 5
    assert anchored_positions(grad, mask, 0.5, 0.9) == [[2, 0], [3, 4, 5]]
    embeds = torch.tensor([[[0.0, 0.0], [2.0, 0.0], [0.0, 3.0], [7.0, 7.0]]])  # the last one is padding
    torch.manual_seed(0)
    draws = torch.randint(3, (3,))
    torch.manual_seed(0)
    value = information_bottleneck(embeds, torch.tensor([[1, 1, 1, 0]]))
    pairs = zip(range(3), draws.tolist(), strict=True)
    expected = sum(((embeds[0, i] - embeds[0, j]) ** 2 / 2).sum() for i, j in pairs) / 3
    assert expected > 0 and value.item() == pytest.approx(expected.item())


def test_infobert_accumulation_modes_agree_and_train_the_critic():
    model, tok = tiny_bert(2, seed=1)
    batch = sentiment_batch(tok)
    results = []
    for accumulate in ("graph", "grads"):
        objective = build_objective("infobert", {"accumulate": accumulate, "alpha": 1.0, "beta": 0.1})
        torch.manual_seed(3)
        objective.setup(model, TrainContext(tok, get_task("sst2"), "tiny"))
        model.zero_grad(set_to_none=True)
        model.train()
        torch.manual_seed(4)
        loss, logs = objective.loss(model, batch)
        loss.backward()
        critic = list(objective.modules()["infonce_critic"].parameters())
        assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in critic)
        results.append((loss.item(), [p.grad.clone() for p in [*model.parameters(), *critic]], logs))
    assert results[0][0] == pytest.approx(results[1][0], rel=1e-5)
    for a, b in zip(results[0][1], results[1][1], strict=True):
        assert torch.allclose(a, b, atol=1e-6)
    assert results[0][2]["af"] != 0 and results[0][2]["ib"] > 0
