"""The stability probe and `robustft probe` on tiny random models."""

import json

import pytest

from robustft.cli import main
from robustft.models.factory import tiny_bert
from robustft.models.im import convert
from robustft.models.probe import noise_pairs, plot, probe, swap_pairs

NEIGHBORS = {"good": ["fine", "nice"], "film": ["movie"]}
TEXTS = ["a good film .", "nothing to swap here .", "good acting and a good film !"]


def test_swap_pairs_replace_neighbours_and_are_seeded():
    pairs = swap_pairs(TEXTS, swaps=2, seed=3, neighbors=NEIGHBORS)
    assert [p.clean for p in pairs] == [TEXTS[0], TEXTS[2]]  # a text with no neighbour is skipped
    for p in pairs:
        assert p.perturbed != p.clean and len(p.perturbed.split()) == len(p.clean.split())
        changed = [(a, b) for a, b in zip(p.clean.split(), p.perturbed.split(), strict=True) if a != b]
        assert 1 <= len(changed) <= 2 and all(b in NEIGHBORS[a] for a, b in changed)
    assert pairs == swap_pairs(TEXTS, swaps=2, seed=3, neighbors=NEIGHBORS)


def test_probe_measures_every_layer_and_the_solver(tmp_path):
    model, tok = tiny_bert(seed=0)
    pairs = noise_pairs(TEXTS)
    plain = probe(model, tok, pairs, noise_std=0.1)
    assert len(plain["distance_mean"]) == 3 and plain["residual"] == {}
    assert all(d > 0 for d in plain["distance_mean"])
    assert probe(model, tok, pairs, noise_std=0.0)["distance_mean"] == [0.0, 0.0, 0.0]
    convert(model, arch="ex", layers="all", form="layer", dt=0.2)
    assert probe(model, tok, pairs, noise_std=0.1)["residual"] == {}
    convert(model, arch="im", layers="all", form="layer", dt=0.2, K=3, eta=0.2)
    implicit = probe(model, tok, pairs, noise_std=0.1)
    assert set(implicit["residual"]) == {"layer 1", "layer 2"}
    assert all(r["end"] < r["start"] for r in implicit["residual"].values())
    plot({"BERT": plain, "IM-BERT": implicit}, tmp_path / "p.png")
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("perturb", ["swap", "noise"])
def test_probe_command_writes_json_and_png(tmp_path, perturb, capsys):
    model, tok = tiny_bert(seed=0)
    convert(model, arch="im", K=2, eta=0.05, layers="2")
    model.save_pretrained(tmp_path / "im")
    tok.save_pretrained(tmp_path / "im")
    out = tmp_path / "out"
    code = main(
        ["probe", "--models", f"IM={tmp_path / 'im'}", "-n", "8", "--perturb", perturb, "--output_dir", str(out)]
    )
    assert code == 0
    record = json.loads((out / "probe.json").read_text())
    assert record["settings"]["IM"]["layers"] == [2] and list(record["results"]["IM"]["residual"]) == ["layer 2"]
    assert (out / "probe.png").exists() and "IM" in capsys.readouterr().out
