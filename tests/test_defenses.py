"""SAFER, RanMASK, DNE and A2T: their noise stays where the papers put it, the ensembles predict the same for the same
text however it is batched, the certificates follow the papers' bounds, and `robustft train` / `robustft eval
--certify` run them end to end (a slow test trains each on the real MiniLM)."""

import json
import math

import pytest
import torch
from scipy.stats import beta

from robustft.adversary import dne, smoothing
from robustft.attacks.victim import Victim
from robustft.cli import main
from robustft.data.batching import collate, encode
from robustft.data.example import Example
from robustft.data.tasks import get_task
from robustft.defenses.a2t import A2T, A2TSettings
from robustft.defenses.ensemble import EnsembleClassifier, as_ensemble
from robustft.defenses.registry import defense_for
from robustft.defenses.settings import CONFIG_KEY, EnsembleSettings
from robustft.evaluation import certify
from robustft.models.factory import tiny_bert
from robustft.training.objectives import build_objective
from robustft.training.objectives.base import TrainContext

SST2, SNLI = get_task("sst2"), get_task("snli")
TEXTS = ["a good movie with a great cast and a fine story", "terrible , boring film", "the unbelievable plot"]


@pytest.fixture(scope="module")
def tiny():
    return tiny_bert(2, seed=0)


def batch_of(tok, texts, pairs=None):
    examples = [
        Example(t, 0) if pairs is None else Example(p, 0, t) for t, p in zip(texts, pairs or texts, strict=True)
    ]
    return collate(encode(tok, examples, 64), tok.pad_token_id)


def inputs_of(batch):
    return {k: v for k, v in batch.items() if k not in ("examples", "labels")}


def words_of(tok, batch, task=SST2):
    table = smoothing.neighbour_table(tok)
    return table, smoothing.batch_words(batch["input_ids"], batch["attention_mask"], table.continuation, tok, task)


def test_safer_replaces_only_whole_words_of_the_field_and_only_within_their_sets(tiny):
    _, tok = tiny
    batch = batch_of(tok, TEXTS[:1], pairs=["the premise stays as it is"])
    table, words = words_of(tok, batch, SNLI)
    ids = batch["input_ids"]
    changed = torch.zeros_like(ids, dtype=torch.bool)
    for seed in range(20):
        noisy = smoothing.substitute(
            ids, words, table, torch.rand(ids.shape, generator=torch.Generator().manual_seed(seed))
        )
        moved = noisy != ids
        changed |= moved
        for p in moved[0].nonzero().flatten().tolist():  # a substitute is a first-order member of the word's set
            assert int(noisy[0, p]) in table.ids[ids[0, p], : table.first[ids[0, p]]].tolist()
    assert changed.any()
    assert not (changed & ~words.whole).any()  # premise, special tokens and multi-piece words keep their tokens
    premise_end = ids[0].tolist().index(tok.sep_token_id)
    assert not changed[0, : premise_end + 1].any()


def test_ranmask_masks_round_rate_of_the_words_keeping_two_each_as_one_mask_token(tiny):
    _, tok = tiny
    batch = batch_of(tok, TEXTS)
    defense = defense_for(EnsembleSettings("ranmask"), tok, SST2)
    ids, mask = batch["input_ids"], batch["attention_mask"]
    words = defense.words(ids, mask)
    masked = defense.masked_count(words.count)
    assert masked.tolist() == [min(round(h * 0.9), h - 2) for h in words.count.tolist()]
    for seed in range(5):
        keys = torch.rand(len(ids), int(words.count.max()), generator=torch.Generator().manual_seed(seed))
        noisy = defense.mask(ids, mask, None, words, keys)
        for row in range(len(ids)):
            h = int(words.count[row])
            hidden = set(sorted(range(h), key=lambda w: float(keys[row, w]))[: int(masked[row])])
            expected, last = [], None  # built by hand: each hidden word one mask, other tokens kept in order
            for p in range(int(mask[row].sum())):
                w = int(words.word_of[row, p])
                if w in hidden:
                    expected += [] if w == last else [tok.mask_token_id]
                else:
                    expected.append(int(ids[row, p]))
                last = w
            got = noisy["input_ids"][row][noisy["attention_mask"][row].bool()].tolist()
            assert got == expected
            assert (noisy["input_ids"][row][~noisy["attention_mask"][row].bool()] == tok.pad_token_id).all()


def test_an_ensemble_answers_the_same_for_a_text_whatever_its_batch_and_padding(tiny):
    model, tok = tiny
    for kind in ("safer", "ranmask", "dne"):
        ens = EnsembleClassifier(model, tok, SST2, EnsembleSettings(kind, copies=8, vote="probs", chunk=5))
        together = ens(**inputs_of(batch_of(tok, TEXTS))).logits
        alone = ens(**inputs_of(batch_of(tok, TEXTS[1:2]))).logits
        assert torch.allclose(together[1], alone[0], atol=1e-5), kind
        assert torch.allclose(together.softmax(-1).sum(-1), torch.ones(3))


def test_copies_go_through_the_classifier_in_chunks_of_rows_and_votes_count_copies(tiny):
    model, tok = tiny
    calls = []
    hook = model.register_forward_hook(lambda m, args, kwargs_out: calls.append(1))
    try:
        settings = EnsembleSettings("ranmask", copies=10, vote="votes", chunk=16)
        ens = EnsembleClassifier(model, tok, SST2, settings, distinct_only=False)
        shares = ens(**inputs_of(batch_of(tok, TEXTS))).logits.softmax(-1)
    finally:
        hook.remove()
    assert len(calls) == math.ceil(3 * 10 / 16)  # 30 copies, 2 forwards: not one per copy
    assert torch.allclose((shares * 10).round(), shares * 10, atol=1e-4)  # shares of 10 votes


def test_a_trained_defense_says_in_its_config_how_it_predicts_and_the_victim_uses_it(tiny, tmp_path):
    model, tok = tiny_bert(2, seed=0)
    objective = build_objective("ranmask", {"copies": 7})
    objective.setup(model, TrainContext(tok, SST2, "tiny"))
    model.save_pretrained(tmp_path)
    saved = json.loads((tmp_path / "config.json").read_text())[CONFIG_KEY]
    assert saved["kind"] == "ranmask" and saved["copies"] == 7 and saved["rate"] == 0.9
    victim = Victim(model, tok, SST2)
    assert isinstance(victim.model, EnsembleClassifier) and victim.model.settings.copies == 7
    plain, _ = tiny
    assert as_ensemble(plain, tok, SST2) is plain


def test_dirichlet_weights_lie_on_each_words_hull_and_ascent_raises_the_loss(tiny):
    model, tok = tiny
    batch = batch_of(tok, TEXTS)
    table = smoothing.neighbour_table(tok, width=50, second_order=True)
    words = smoothing.batch_words(batch["input_ids"], batch["attention_mask"], table.continuation, tok, SST2)
    weights = smoothing.dirichlet_weights(batch["input_ids"], words, table, 1.0, 0.5, torch.Generator().manual_seed(0))
    assert torch.allclose(weights.sum(-1), torch.ones(weights.shape[:2]))
    assert (weights[~words.whole][..., 0] == 1).all()  # tokens that cannot move stay themselves
    beyond = torch.arange(50) >= table.size[batch["input_ids"]].unsqueeze(-1)
    assert (weights[beyond] == 0).all()
    labels = torch.tensor([1, 0, 1])
    torch.manual_seed(0)
    parts = dne.losses(
        model, batch, table, words, dne.DNESettings(steps=3), lambda z: torch.nn.functional.cross_entropy(z, labels)
    )
    assert len(parts) == 4 and parts[-1].item() > parts[0].item()


def test_a2t_flips_a_trained_model_within_its_word_budget_and_never_touches_stopwords():
    model, tok = tiny_bert(2, seed=0, initializer_range=0.2)
    examples = [
        Example(f"the film was {w}", y) for y, ws in ((1, ["good", "great"]), (0, ["bad", "awful"])) for w in ws
    ]
    batch = collate(encode(tok, examples, 32), tok.pad_token_id)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(40):
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(**inputs_of(batch)).logits, batch["labels"]).backward()
        optimizer.step()
    neighbors = {
        "good": ["bad"],
        "great": ["awful"],
        "bad": ["good"],
        "awful": ["great"],
        "the": ["a"],
        "film": ["movie"],
    }
    attack = A2T(A2TSettings(similarity=0.0), tok, SST2, neighbors)
    outcome = attack.attack(model.train(), batch)
    assert model.training  # the attack ran in eval mode and gave the mode back
    assert outcome.success.all() and all(1 <= c <= 4 for c in outcome.changed)
    for row, example in enumerate(examples):
        text = tok.decode(outcome.input_ids[row], skip_special_tokens=True)
        assert text.startswith("the ")  # "the" is a stopword: never substituted
        assert (
            text.split()[-1]
            == {"good": "bad", "great": "awful", "bad": "good", "awful": "great"}[example.text_a.split()[-1]]
        )


def test_certificate_bounds_follow_the_papers():
    assert certify.lower_bound(90, 100, 0.05) == pytest.approx(beta.ppf(0.05, 90, 11))
    assert certify.lower_bound(0, 100, 0.05) == 0.0
    records = [
        {"index": i, "certify": {"radius": r, "vote_correct": c}}
        for i, (r, c) in enumerate([(-1, False), (0, True), (2, True), (5, True)])
    ]
    summary = certify.certified_summary(records, {"defense": "ranmask", "samples": 100, "confidence": 0.95})
    assert summary["accuracy_by_changed_words"]["1"]["accuracy"] == 0.5
    assert summary["accuracy_by_changed_words"]["5"]["accuracy"] == 0.25 and summary["n"] == 4
    assert summary["vote_accuracy"]["accuracy"] == 0.75 and summary["mean_radius"] == (0 + 0 + 2 + 5) / 4


def test_safer_certificate_uses_hand_computed_overlaps(tiny):
    """ultimate {ultimate, final}, final {final, last, ultimate}, last {last, final}: q_ultimate = 2/3 (u = final),
    q_last = 2/3, so "ultimate last" has Delta = 1 - 4/9; certified iff p > 0.5 + 5/9."""
    model, tok = tiny
    neighbors = {"ultimate": ["final"], "final": ["last", "ultimate"], "last": ["final"]}
    safer = defense_for(EnsembleSettings("safer"), tok, SST2, neighbors)
    ids = tok("the ultimate last")["input_ids"]
    assert safer.certificate(0.5 + 5 / 9 + 0.01, ids) == {"words": 3, "delta": round(5 / 9, 6), "certified": True}
    assert not safer.certificate(0.5 + 5 / 9 - 0.01, ids)["certified"]


@pytest.mark.parametrize("method", ["safer", "ranmask", "dne", "a2t"])
def test_robustft_train_runs_each_defense_on_an_im_model(method, tiny_model_dir, tmp_path, capsys):
    args = {"a2t": ["--method_args.clean_epochs", "0", "--method_args.share", "0.5"]}.get(method, [])
    args += {"dne": ["--method_args.steps", "1"]}.get(method, [])
    small = ["--n_train", "32", "--n_dev", "16", "--epochs", "1", "--batch_size", "16", "--max_length", "32"]
    code = main(
        [
            "train",
            "--model",
            tiny_model_dir,
            "--method",
            method,
            "--arch",
            "im",
            "--im.K",
            "1",
            *small,
            "--precision",
            "fp32",
            "--output_dir",
            str(tmp_path / method),
            "--progress",
            "false",
            *args,
        ]
    )
    assert code == 0
    config = json.loads((tmp_path / method / "best" / "config.json").read_text())
    assert config.get("im") and (CONFIG_KEY in config) == (method != "a2t")
    recorded = json.loads((tmp_path / method / "config.json").read_text())
    assert any(method.upper()[:3] in d.upper() for d in recorded["deviations"])


@pytest.mark.parametrize("method", ["safer", "ranmask"])
def test_eval_certify_records_certified_accuracy_with_n_interval_copies_and_confidence(
    method, tiny_model_dir, tmp_path, capsys
):
    small = ["--n_train", "16", "--n_dev", "16", "--epochs", "1", "--max_length", "32", "--progress", "false"]
    assert (
        main(["train", "--model", tiny_model_dir, "--method", method, "--output_dir", str(tmp_path / "m"), *small]) == 0
    )
    evaluate = ["eval", "--model", str(tmp_path / "m"), "-n", "12", "--certify", "--certify_samples", "40"]
    assert main([*evaluate, "--output_dir", str(tmp_path / "e"), "--progress", "false"]) == 0
    metrics = json.loads((tmp_path / "e" / "metrics.json").read_text())
    certified = metrics["certified"]
    assert certified["samples"] == 40 and certified["confidence"] == 0.95 and certified["n"] == 12
    figures = [certified["accuracy"]] if method == "safer" else list(certified["accuracy_by_changed_words"].values())
    assert all(f["n"] == 12 and len(f["ci95"]) == 2 for f in figures)
    assert metrics["ensemble"]["kind"] == method and metrics["ensemble"]["copies"] == 100
    records = [json.loads(line) for line in (tmp_path / "e" / "examples.jsonl").read_text().splitlines()]
    assert all(0 <= r["certify"]["votes"] <= 40 for r in records)
    # the certified classifier's own clean accuracy: its vote prediction is the majority of the 40 votes
    assert all(r["certify"]["vote_correct"] == (r["certify"]["vote_prediction"] == r["label"]) for r in records)
    # two labels: the true label won more than 20 of the 40 votes (a tie goes to label 0, argmax's first)
    won = [r["certify"]["votes"] > 20 or (r["certify"]["votes"] == 20 and r["label"] == 0) for r in records]
    assert [r["certify"]["vote_correct"] for r in records] == won
    assert certified["vote_accuracy"]["correct"] == sum(won) and certified["vote_accuracy"]["n"] == 12
    err = capsys.readouterr().err
    assert "certified accuracy" in err and "clean accuracy of the certified classifier" in err


def test_eval_certify_refuses_a_model_without_a_certifiable_ensemble(tiny_model_dir, tmp_path, capsys):
    assert main(["eval", "--model", tiny_model_dir, "-n", "4", "--certify", "--output_dir", str(tmp_path)]) == 2
    assert "certify:" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("method", ["safer", "ranmask", "dne", "a2t"])
def test_each_defense_trains_the_real_minilm_on_200_examples(method, tmp_path):
    from robustft.config import TrainConfig
    from robustft.training.loop import train

    extra = {"a2t": {"clean_epochs": 0}}.get(method, {})
    cfg = TrainConfig(
        model="minilm",
        task="sst2",
        method=method,
        method_args=extra,
        n_train=200,
        n_dev=200,
        epochs=10,  # the defenses' preset; before issue 67's fix a 3 here was silently replaced by it
        batch_size=16,
        max_length=64,
        lr=1e-4,  # explicit: TextDefender's 2e-5 (the preset) needs more than 39 steps
        output_dir=str(tmp_path / method),
        progress=False,
        precision="fp32",
    )
    run = train(cfg)
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["best"]["dev_accuracy"] > 0.6  # chance is 0.5
    saved = json.loads((run / "best" / "config.json").read_text())
    assert (CONFIG_KEY in saved) == (method != "a2t")  # eval and attack will predict by the ensemble
