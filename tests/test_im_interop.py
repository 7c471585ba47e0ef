"""A saved IM/EX model travels: after `import robustft` the Auto classes and `pipeline` give the IM model, without it
transformers refuses it naming robustft's model type, an explicit class warns; every saved folder has a model card."""

import json
import logging
import subprocess
import sys

import pytest
import torch
import transformers
from transformers import AutoModelForSequenceClassification, BertForSequenceClassification, pipeline

import robustft  # registers the IM/EX model types with the Auto classes, as a user's import does
from im_helpers import TEXTS, batch, logits, tiny_mpnet
from robustft.cli import main
from robustft.data.tasks import load_examples
from robustft.models.factory import load_classifier, load_config, tiny_bert
from robustft.models.im import convert, im_stats, settings_of, unconvert
from robustft.models.model_card import write_model_card
from train_helpers import tiny_train_config


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
def test_auto_classes_and_pipeline_give_the_saved_im_model_after_import_robustft(tmp_path, arch):
    model, tok = saved(tmp_path, arch)
    enc = batch(tok)
    expected = logits(model, enc)
    auto = AutoModelForSequenceClassification.from_pretrained(tmp_path).eval()
    assert settings_of(auto).arch == arch and type(auto).__name__ == "RobustftImBertForSequenceClassification"
    assert torch.equal(logits(auto, enc), expected)
    classify = pipeline("text-classification", model=str(tmp_path), top_k=None)
    scores = {d["label"]: d["score"] for d in classify([TEXTS[0]])[0]}
    assert scores["positive"] == pytest.approx(torch.softmax(expected[0], -1)[1].item(), abs=1e-5)
    plain = BertForSequenceClassification.from_pretrained(tmp_path).eval()  # an explicit class: plain BERT, warned
    assert not im_stats(plain)
    assert not torch.allclose(logits(plain, enc), expected)
    assert any(
        "robustft_im_bert" in m
        for m in transformers_warnings(lambda: BertForSequenceClassification.from_pretrained(tmp_path))
    )
    loaded, _ = load_classifier(str(tmp_path))
    assert settings_of(loaded).arch == arch and type(load_config(str(tmp_path))).__name__ == "BertConfig"
    assert torch.equal(logits(loaded, enc), expected)


def test_auto_classes_restore_an_im_mpnet(tmp_path):
    model = convert(tiny_mpnet(), arch="im", layers="1-2", K=3, eta=0.1)
    ids = torch.tensor([[0, 5, 17, 42, 2], [0, 9, 2, 1, 1]])
    mask = (ids != 1).long()
    model.save_pretrained(tmp_path)
    auto = AutoModelForSequenceClassification.from_pretrained(tmp_path, dtype=torch.float64).eval()
    with torch.no_grad():
        assert torch.equal(
            auto(input_ids=ids, attention_mask=mask).logits, model(input_ids=ids, attention_mask=mask).logits
        )
    assert list(im_stats(auto)) == ["layer 1", "layer 2"]


@pytest.mark.slow  # a python process that does not import robustft
def test_without_import_robustft_the_refusal_names_robustft(tmp_path):
    saved(tmp_path)
    script = (
        "import sys, transformers\n"
        "try:\n"
        "    transformers.pipeline('text-classification', model=sys.argv[1])\n"
        "except ValueError as exc:\n"
        "    print(exc)\n"
        "assert 'robustft' not in sys.modules\n"
    )
    proc = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "model type `robustft_im_bert`" in proc.stdout


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
        'pipeline("text-classification"',
        "import robustft",
        "`pip install -e .`",
        f"| robustft | {robustft.__version__} |",
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
    assert "pip install robustft" not in text


def test_model_card_written_before_the_swap_names_the_final_folder(tmp_path):
    saved(tmp_path / "best.tmp")  # a training writes best.tmp/, card included, then renames it to best/
    card = write_model_card(tmp_path / "best.tmp", {"method": "standard"}).read_text()
    assert 'load_classifier("path/to/best")' in card and ".tmp" not in card


def trained_im_run(tmp_path, base: str):
    """An IM model trained for two steps on 16 real SST-2 examples, as a run folder."""
    im = {"layers": "all", "K": 3, "eta": 0.1, "form": "layer", "dt": 0.5}
    cfg = tiny_train_config(base, tmp_path / "run", arch="im", im=im)
    return robustft.train(cfg, progress=False)


def pipeline_agrees_with_robustft_eval(tmp_path, run_dir):
    """`pipeline(...)` on the run's best/ folder predicts what `robustft eval` of the run folder predicted, with the
    same probabilities, on 50 SST-2 dev examples; the plain encoder (the IM connections dropped) does not."""
    out = tmp_path / "eval"
    argv = ["eval", "--model", str(run_dir), "--task", "sst2", "--split", "dev", "-n", "50", "--precision", "fp32"]
    assert main([*argv, "--progress", "false", "--output_dir", str(out)]) == 0
    records = [json.loads(line) for line in (out / "examples.jsonl").read_text().splitlines()]
    texts = {e.id: e.text_a for e in load_examples("sst2", "dev", n=50, seed=0)}
    classify = pipeline("text-classification", model=str(run_dir / "best"), top_k=None)
    label2id = classify.model.config.label2id
    assert type(classify.model).__name__.startswith("RobustftIm") and len(records) == 50
    for record, scores in zip(records, classify([texts[r["id"]] for r in records]), strict=True):
        probs = [0.0] * len(label2id)
        for score in scores:
            probs[label2id[score["label"]]] = score["score"]
        assert max(range(len(probs)), key=probs.__getitem__) == record["prediction"]
        assert probs == pytest.approx(record["probs"], abs=1e-4)
    plain = BertForSequenceClassification.from_pretrained(run_dir / "best").eval()
    enc = classify.tokenizer([texts[r["id"]] for r in records[:8]], padding=True, return_tensors="pt")
    plain_probs = torch.softmax(logits(plain, enc), -1)
    assert not torch.allclose(plain_probs, torch.tensor([r["probs"] for r in records[:8]]), atol=1e-3)


def test_pipeline_predicts_as_robustft_eval_on_a_trained_tiny_im_model(tmp_path):
    tiny, tok = tiny_bert(seed=0)
    tiny.save_pretrained(tmp_path / "tiny")
    tok.save_pretrained(tmp_path / "tiny")
    run_dir = trained_im_run(tmp_path, str(tmp_path / "tiny"))
    loaded, _ = load_classifier(str(run_dir))  # a run folder is a model: its best/
    assert settings_of(loaded).K == 3
    pipeline_agrees_with_robustft_eval(tmp_path, run_dir)


@pytest.mark.slow  # the real MiniLM backbone
def test_pipeline_predicts_as_robustft_eval_on_a_trained_minilm_im_model(tmp_path):
    pipeline_agrees_with_robustft_eval(tmp_path, trained_im_run(tmp_path, "minilm"))
