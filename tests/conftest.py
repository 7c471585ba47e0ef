"""Offline by construction: the hub is off and the data root is the shared folder unless a test says otherwise."""

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("ROBUSTFT_DATA", str(Path(__file__).resolve().parents[2] / "shared" / "data"))
os.environ["ROBUSTFT_DATA"] = str(Path(os.environ["ROBUSTFT_DATA"]).resolve())  # tests change the working dir


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """A random tiny BERT classifier saved as a folder, usable anywhere a model name is."""
    from robustft.models.factory import tiny_bert

    model, tokenizer = tiny_bert(
        num_labels=2, seed=0, id2label={0: "negative", 1: "positive"}, label2id={"negative": 0, "positive": 1}
    )
    folder = tmp_path_factory.mktemp("tiny_bert")
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


@pytest.fixture(autouse=True)
def one_thread():
    """Every test runs torch on one thread and restores the count after: tiny models are faster on one thread,
    the machine's two cores are shared, and a test must not change the thread count of the next."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
