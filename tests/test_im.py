"""IM-BERT connection on tiny random encoders: identities, round-trips, solver behaviour, divergence, gradients."""

import logging

import pytest
import torch
import transformers

from im_helpers import TEXTS, TINY_ENCODER, assert_weight_gradient_matches_finite_differences, batch, logits
from robustft.errors import ConfigError
from robustft.models.factory import load_classifier, tiny_bert
from robustft.models.im import (
    ImDivergence,
    ImSettings,
    convert,
    encoder_layers,
    im_stats,
    parse_layers,
    settings_of,
    unconvert,
)
from robustft.models.im_layer import _token_mask


@pytest.fixture(scope="module")
def tiny():
    return tiny_bert(seed=0)


def test_layer_specs_are_one_based():
    assert parse_layers("1-3,5") == (1, 2, 3, 5)
    assert parse_layers("all") is None and parse_layers("none") == ()
    for bad in ("0-2", "3-1", "x"):
        with pytest.raises(ConfigError):
            parse_layers(bad)
    with pytest.raises(ConfigError):
        ImSettings(form="nope")
    with pytest.raises(ConfigError, match="out of range"):
        convert(tiny_bert()[0], layers="1-3")


def test_no_im_layers_is_bit_identical(tiny):
    model, tok = tiny_bert(seed=0)
    enc = batch(tok)
    plain = logits(model, enc)
    convert(model, arch="im", layers="none", K=5)
    assert torch.equal(logits(model, enc), plain)


def test_increment_k0_and_ex_dt1_equal_the_pretrained_model():
    model, tok = tiny_bert(seed=0)
    enc = batch(tok)
    plain = logits(model, enc)
    convert(model, arch="im", layers="all", form="increment", K=0)
    assert torch.equal(logits(model, enc), plain)
    convert(model, arch="ex", layers="all", form="increment", dt=1.0)
    assert torch.equal(logits(model, enc), plain)
    convert(model, arch="im", layers="all", form="increment", K=3, eta=0.05)
    assert not torch.equal(logits(model, enc), plain)
    unconvert(model)
    assert torch.equal(logits(model, enc), plain) and settings_of(model) is None


def test_form_layer_ex_is_an_outer_explicit_step():
    model, tok = tiny_bert(seed=0)
    enc = batch(tok)
    layer = encoder_layers(model)[0]
    h = torch.randn(2, 4, 64)
    with torch.no_grad():
        f_h = layer(h)
        convert(model, arch="ex", form="layer", dt=0.5, layers="1")
        assert torch.allclose(layer(h), h + 0.5 * f_h)
    assert logits(model, enc).shape == (2, 2)


def test_save_pretrained_round_trip_restores_connections(tmp_path):
    model, tok = tiny_bert(seed=0)
    enc = batch(tok)
    plain_keys = set(model.state_dict())
    convert(model, arch="im", layers="2", K=2, eta=0.05, form="layer", dt=0.5, grad="jfb")
    assert set(model.state_dict()) == plain_keys  # plain checkpoints load into IM models and back
    expected = logits(model, enc)
    model.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    loaded, _ = load_classifier(str(tmp_path))
    assert settings_of(loaded) == settings_of(model)
    assert list(im_stats(loaded)) == ["layer 2"]
    assert torch.equal(logits(loaded, enc), expected)


def test_residual_decreases_on_a_contractive_case(tiny):
    model, tok = tiny_bert(seed=0)
    convert(model, arch="im", layers="all", form="layer", dt=0.2, K=6, eta=0.2)
    logits(model, batch(tok))
    for stats in im_stats(model).values():
        res = stats["last_relative_residual"]
        assert len(res) == 7 and all(b < a for a, b in zip(res, res[1:], strict=False)), res
        assert stats["diverged"] == 0


def test_padding_never_enters_the_solve():
    model, tok = tiny_bert(seed=0)
    convert(model, arch="im", layers="all", K=3, eta=0.1)
    padded = batch(tok)
    alone = batch(tok, TEXTS[1:])
    assert padded["attention_mask"][1].sum() < padded["attention_mask"].shape[1]  # really padded
    assert torch.allclose(logits(model, padded)[1], logits(model, alone)[0], atol=1e-5)
    residual_alone = im_stats(model)["layer 1"]["last_relative_residual"]
    # the mask the layers see marks exactly the real tokens, whatever form the encoder passes it in
    mask2d = padded["attention_mask"]
    additive = (1.0 - mask2d[:, None, None, :].float()) * torch.finfo(torch.float32).min
    hidden = torch.zeros(*mask2d.shape, 8)
    for form in (mask2d[:, None, None, :].bool(), additive):
        assert torch.equal(_token_mask(form, hidden)[..., 0], mask2d.float())
    assert residual_alone[-1] < residual_alone[0]


def test_divergence_falls_back_counts_and_logs(caplog):
    model, tok = tiny_bert(seed=0)
    enc = batch(tok)
    convert(model, arch="ex", layers="all", form="layer", dt=1.0)
    explicit = logits(model, enc)
    convert(model, arch="im", layers="all", form="layer", dt=1.0, K=4, eta=50.0, on_divergence="fallback")
    with caplog.at_level(logging.WARNING, logger="robustft.im"):
        out = logits(model, enc)
    stats = im_stats(model)
    assert all(s["diverged"] == 2 for s in stats.values()), stats
    assert torch.allclose(out, explicit)
    assert "diverged" in caplog.text
    convert(model, arch="im", layers="all", form="layer", dt=1.0, K=4, eta=50.0, on_divergence="raise")
    with pytest.raises(ImDivergence, match="layer 1"):
        logits(model, enc)


def test_nonfinite_solve_is_detected():
    model, tok = tiny_bert(seed=0)
    convert(model, arch="im", layers="all", K=2, eta=1e30)
    out = logits(model, batch(tok))
    assert torch.isfinite(out).all()
    assert im_stats(model)["layer 1"]["diverged"] == 2


def _double_model(seed=0):
    model, tok = tiny_bert(seed=seed, attn_implementation="eager")
    return model.double(), tok


def test_unrolled_gradients_match_finite_differences():
    model, tok = _double_model()
    convert(model, arch="im", layers="all", form="increment", K=3, eta=0.05, grad="unrolled")
    assert_weight_gradient_matches_finite_differences(model, batch(tok), eps=1e-5)


def test_unrolled_input_gradient_passes_gradcheck():
    model, _ = _double_model()
    convert(model, arch="im", form="layer", dt=0.5, K=2, eta=0.1, grad="unrolled", layers="1")
    layer = encoder_layers(model)[0]
    h = torch.randn(1, 3, 64, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x: layer(x), (h,), eps=1e-6, atol=1e-5, fast_mode=True)


@pytest.mark.parametrize("grad", ["unrolled", "jfb", "explicit"])
def test_grad_modes_share_the_forward_value_and_train(grad):
    model, tok = tiny_bert(seed=0)
    enc = batch(tok)
    convert(model, arch="im", layers="all", K=3, eta=0.1, grad=grad)
    reference = logits(model, enc)
    out = model(**enc, labels=torch.tensor([1, 0]))
    assert torch.allclose(out.logits, reference, atol=1e-6)
    out.loss.backward()
    grads = [p.grad for p in model.parameters() if p.requires_grad]
    assert all(g is not None and torch.isfinite(g).all() for g in grads)
    assert encoder_layers(model)[0].attention.self.query.weight.grad.abs().sum() > 0


def test_bf16_autocast_and_inference_mode():
    model, tok = tiny_bert(seed=0)
    enc = batch(tok)
    convert(model, arch="im", layers="all", K=2, eta=0.1)
    reference = logits(model, enc)
    with torch.inference_mode():
        assert torch.allclose(model(**enc).logits, reference, atol=1e-6)
    model.train()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = model(**enc, labels=torch.tensor([1, 0]))
    out.loss.backward()
    assert torch.isfinite(out.loss) and torch.allclose(out.logits.float(), reference, atol=0.1)


def test_dropout_is_the_same_in_every_solver_call():
    model, tok = tiny_bert(seed=0, hidden_dropout_prob=0.3, attention_probs_dropout_prob=0.3)
    convert(model, arch="im", layers="all", form="layer", dt=0.2, K=5, eta=0.2, grad="jfb")
    model.train()
    model(**batch(tok))
    res = im_stats(model)["layer 1"]["last_relative_residual"]
    assert all(b < a for a, b in zip(res, res[1:], strict=False)), res


DISTILBERT = dict(vocab_size=100, dim=32, n_layers=2, n_heads=2, hidden_dim=64, max_position_embeddings=40)
OTHER_ENCODERS = {  # the encoders docs/im_bert.md names, each with its own layer call and layer list
    "roberta": ("Roberta", TINY_ENCODER),
    "mpnet": ("MPNet", TINY_ENCODER),
    "deberta": ("Deberta", TINY_ENCODER),
    "deberta-v2": ("DebertaV2", TINY_ENCODER),
    "electra": ("Electra", {**TINY_ENCODER, "embedding_size": 32}),
    "distilbert": ("DistilBert", {**DISTILBERT, "dropout": 0.0, "attention_dropout": 0.0}),
}


def _tiny(name: str):
    prefix, settings = OTHER_ENCODERS[name]
    config = getattr(transformers, f"{prefix}Config")(**settings)
    return getattr(transformers, f"{prefix}ForSequenceClassification")(config).eval()


@pytest.mark.parametrize("name", OTHER_ENCODERS)
def test_other_encoders(name, tmp_path):
    torch.manual_seed(0)
    model = _tiny(name)
    ids = torch.tensor([[0, 5, 6, 7, 2], [0, 8, 2, 1, 1]])
    enc = {"input_ids": ids, "attention_mask": (ids != 1).long()}
    plain = logits(model, enc)
    convert(model, arch="im", layers="all", form="increment", K=0)
    assert torch.equal(logits(model, enc), plain)
    convert(model, arch="im", layers="all", K=2, eta=0.05)
    out = logits(model, enc)
    assert not torch.equal(out, plain) and torch.isfinite(out).all()
    assert im_stats(model)["layer 2"]["forwards"] == 1
    model.save_pretrained(tmp_path)
    loaded = type(model).from_pretrained(tmp_path).eval()
    from robustft.models.im import apply_from_config

    apply_from_config(loaded)
    assert torch.equal(logits(loaded, enc), out)


@pytest.mark.slow
def test_minilm_increment_k0_is_the_pretrained_model_and_round_trips(tmp_path):
    model, tok = load_classifier("minilm", ("negative", "positive"))
    enc = batch(tok)
    plain = logits(model, enc)
    convert(model, arch="im", form="increment", K=0, layers="1-6")
    assert torch.equal(logits(model, enc), plain)
    convert(model, arch="im", form="increment", K=2, eta=0.01, layers="4-6", grad="explicit")
    expected = logits(model, enc)
    model.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    loaded, _ = load_classifier(str(tmp_path))
    assert torch.equal(logits(loaded, enc), expected)
    assert list(im_stats(loaded)) == ["layer 4", "layer 5", "layer 6"]


@pytest.mark.parametrize("grad", ["unrolled", "jfb"])
def test_nonfinite_solves_leave_every_gradient_finite(grad):
    model, tok = tiny_bert(seed=0)
    enc = batch(tok)
    labels = torch.tensor([1, 0])
    model(**enc, labels=labels).loss.backward()
    plain = {n: p.grad.clone() for n, p in model.named_parameters()}
    model.zero_grad(set_to_none=True)
    convert(model, arch="im", layers="all", K=2, eta=1e30, grad=grad)
    model(**enc, labels=labels).loss.backward()
    assert all(s["nonfinite"] == 2 for s in im_stats(model).values())
    # every row fell back to the explicit step, which in the increment form with dt 1 is the plain layer
    for name, p in model.named_parameters():
        assert torch.isfinite(p.grad).all(), name
        assert torch.allclose(p.grad, plain[name], atol=1e-6), name


def test_k0_is_the_pretrained_model_bit_for_bit_also_in_training():
    model, tok = tiny_bert(seed=0, hidden_dropout_prob=0.3, attention_probs_dropout_prob=0.3)
    enc = batch(tok)
    model.train()
    torch.manual_seed(7)
    plain = model(**enc).logits
    for arch, extra in (("im", {"K": 0}), ("ex", {"dt": 1.0})):
        convert(model, arch=arch, layers="all", form="increment", **extra)
        torch.manual_seed(7)
        assert torch.equal(model(**enc).logits, plain), arch


def test_default_layers_are_the_upper_half_chosen_on_dev():
    """The default was 'all layers', picked by its AdvGLUE score; on SST-2 dev the upper half ties at half the cost."""
    assert ImSettings().layers == "upper-half"
    assert ImSettings().with_layers(6).layers == (4, 5, 6)
    assert ImSettings().with_layers(12).layers == tuple(range(7, 13))
    assert ImSettings(layers="Upper-Half").to_dict()["layers"] == "upper-half"
    model, _ = tiny_bert(seed=0)
    convert(model)
    assert list(im_stats(model)) == ["layer 2"] and settings_of(model).layers == (2,)


def test_a_run_that_leaves_the_gradient_out_records_the_default_and_never_matches_an_older_folder():
    """The default gradient changed (explicit -> unrolled): a folder trained with `{"arch": "im"}` before must not
    hash equal to one trained now, or resuming would mix two gradients in one model."""
    from robustft.config import TrainConfig, config_hash
    from robustft.models.im_settings import pinned_gradient

    today = TrainConfig(arch="im", im={"K": 10})
    today.im = pinned_gradient(today)  # as train does before it hashes the run
    assert today.im == {"K": 10, "grad": "unrolled"}
    before = TrainConfig(arch="im", im={"K": 10})  # what such a config hashed as before the gradient was written down
    assert config_hash(today) != config_hash(before)
    assert pinned_gradient(TrainConfig(arch="im", im={"grad": "explicit"})) == {"grad": "explicit"}
    assert pinned_gradient(TrainConfig(im={"K": 3})) == {"K": 3}  # a plain model ignores its im settings


def test_an_encoder_whose_layers_are_shared_is_refused_by_name():
    """ALBERT applies one layer at every depth: there is no per-layer list to convert, and the error says so."""
    config = transformers.AlbertConfig(**{**TINY_ENCODER, "embedding_size": 32})
    model = transformers.AlbertForSequenceClassification(config)
    with pytest.raises(ConfigError, match="cannot find the encoder layer list of AlbertForSequenceClassification"):
        convert(model, arch="im", layers="all", K=2)
