"""A saved IM/EX model never loads silently as the plain encoder, and every saved folder can carry a model card."""

import logging

import pytest
import torch
import transformers
from transformers import AutoModelForSequenceClassification, BertForSequenceClassification

from im_helpers import batch, logits
from robustft.models.factory import load_classifier, load_config, tiny_bert
from robustft.models.im import convert, settings_of, unconvert
from robustft.models.model_card import write_model_card


def saved(tmp_path, arch="im"):
    model, tok = tiny_bert(seed=0, id2label={0: "negative", 1: "positive"}, label2id={"negative": 0, "positive": 1})
    convert(model, arch=arch, layers="2", K=2, eta=0.05, form="layer", dt=0.5)
    model.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    return model, tok


def transformers_warnings(call) -> list[str]:
    """The messages transformers logs during `call()`, whatever an earlier test did to its verbosity or handlers
    (the CLI quiets transformers for the whole process)."""
    messages, logger = [], logging.getLogger("transformers")
    handler = logging.Handler(logging.WARNING)
    handler.emit = lambda record: messages.append(record.getMessage())
    verbosity = transformers.logging.get_verbosity()
    transformers.logging.set_verbosity_warning()
    logger.addHandler(handler)
    try:
        call()
    finally:
        logger.removeHandler(handler)
        transformers.logging.set_verbosity(verbosity)
    return messages


@pytest.mark.parametrize("arch", ["im", "ex"])
def test_plain_transformers_refuses_a_saved_im_model_and_robustft_restores_it(tmp_path, arch):
    model, tok = saved(tmp_path, arch)
    enc = batch(tok)
    expected = logits(model, enc)
    with pytest.raises(ValueError, match="robustft_im_bert"):
        AutoModelForSequenceClassification.from_pretrained(tmp_path)
    assert any(
        "robustft_im_bert" in m
        for m in transformers_warnings(lambda: BertForSequenceClassification.from_pretrained(tmp_path))
    )  # an explicit class loads, but says so
    loaded, _ = load_classifier(str(tmp_path))
    assert settings_of(loaded).arch == arch and type(load_config(str(tmp_path))).__name__ == "BertConfig"
    assert torch.equal(logits(loaded, enc), expected)


def test_unconverted_model_saves_as_plain_bert(tmp_path):
    model, _ = saved(tmp_path / "im")
    unconvert(model)
    model.save_pretrained(tmp_path / "plain")
    assert AutoModelForSequenceClassification.from_pretrained(tmp_path / "plain").config.model_type == "bert"


def test_model_card_states_method_settings_data_figures_and_loading(tmp_path):
    saved(tmp_path)
    info = {
        "method": "rift-snli",
        "method_args": {"beta": 5.0},
        "base_model": "minilm",
        "task": "sst2",
        "train_split": "train",
        "n_train": 1000,
        "seed": 0,
        "dev": {"accuracy": 0.8123, "n": 872},
        "robustness": {"advglue-sst2 accuracy": 0.45, "majority-class baseline": 0.514},
        "note": "a | b",
    }
    text = write_model_card(tmp_path, info).read_text()
    for needle in (
        "rift-snli",
        "IM-bert",
        "robustft_im_bert",
        "load_classifier(",
        tmp_path.name,
        "| K | 2 |",
        "| eta | 0.05 |",
        "| form | layer |",
        "| layers | [2] |",
        "| n_train | 1000 |",
        "| accuracy | 0.8123 |",
        "| advglue-sst2 accuracy | 0.45 |",
        "0 = negative, 1 = positive",
        "a \\| b",
    ):
        assert needle in text, needle
    plain, _ = tiny_bert(seed=0)
    plain.save_pretrained(tmp_path / "plain")
    card = write_model_card(tmp_path / "plain", {"method": "standard"}).read_text()
    assert "not a plain Hugging Face model" not in card and "No figures were given" in card
