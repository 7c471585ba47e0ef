"""The masked LM: BERT masking, batched scoring, candidates, loading rules and the shipped MiniLM head."""

import json
import shutil

import pytest
import torch
from transformers import BertForMaskedLM

from robustft.data.batching import pad_rows
from robustft.errors import MissingResource, RobustftError
from robustft.models import mlm
from robustft.models.factory import tiny_bert_config, tiny_bert_mlm
from robustft.models.mlm import scoring


@pytest.fixture(scope="module")
def tiny():
    return tiny_bert_mlm(seed=0)


def test_bert_masking_rates_and_specials():
    ids = torch.randint(1000, 2000, (200, 100))
    special = torch.zeros_like(ids, dtype=torch.bool)
    special[:, 0] = special[:, -1] = True
    random_ids = torch.arange(5000, 6000)
    inputs, labels = mlm.mask_for_mlm(ids, special, 103, random_ids, torch.Generator().manual_seed(0))
    chosen = labels != -100
    assert not chosen[special].any()
    assert (labels[chosen] == ids[chosen]).all()
    assert (inputs[~chosen] == ids[~chosen]).all()
    assert 0.14 < chosen.float().mean().item() / 0.98 < 0.16
    masked = (inputs[chosen] == 103).float().mean().item()
    swapped = ((inputs[chosen] >= 5000) & (inputs[chosen] < 6000)).float().mean().item()
    kept = (inputs[chosen] == ids[chosen]).float().mean().item()
    assert 0.77 < masked < 0.83 and 0.08 < swapped < 0.12 and 0.08 < kept < 0.12
    again, _ = mlm.mask_for_mlm(ids, special, 103, random_ids, torch.Generator().manual_seed(0))
    assert torch.equal(inputs, again)


def test_evaluation_masking_hides_every_chosen_piece():
    ids = torch.randint(1000, 2000, (50, 40))
    inputs, labels = mlm.mask_for_mlm(
        ids,
        torch.zeros_like(ids, dtype=torch.bool),
        103,
        torch.arange(10),
        torch.Generator().manual_seed(1),
        all_mask=True,
    )
    assert (inputs[labels != -100] == 103).all()


def test_head_on_selected_positions_matches_full_logits(tiny):
    model, tok = tiny
    batch = pad_rows([dict(tok("a fine day")), dict(tok("the cat sat on the mat"))], tok.pad_token_id)
    where = batch["attention_mask"].bool()
    full = model(**batch).logits[where]
    assert torch.allclose(mlm.masked_logits(model, batch, where), full, atol=1e-5)


def test_neighbour_head_reads_the_next_positions_and_matches_full_logits(tiny):
    _, tok = tiny
    torch.manual_seed(0)
    model = BertForMaskedLM(tiny_bert_config(vocab_size=len(tok))).eval()
    model.cls = mlm.NeighbourMLMHead(model.config)
    model.tie_weights()
    assert model.cls.predictions.decoder.weight is model.bert.embeddings.word_embeddings.weight
    batch = pad_rows([dict(tok("a fine day")), dict(tok("the cat sat on the mat"))], tok.pad_token_id)
    where = batch["attention_mask"].bool()
    with torch.no_grad():
        full = model(**{k: v for k, v in batch.items() if k != "special_tokens_mask"}).logits
        assert torch.allclose(mlm.masked_logits(model, batch, where), full[where], atol=1e-5)
        hidden = torch.randn(1, 5, model.config.hidden_size)
        changed = hidden.clone()
        changed[0, 3] += 1.0  # a change at position 3 reaches positions 2, 3, 4 and no others
        delta = (model.cls(changed) - model.cls(hidden)).abs().amax(-1)[0]
        assert (delta[[2, 3, 4]] > 0).all() and (delta[[0, 1]] == 0).all()


def test_pseudo_log_likelihood_batches_and_splits_by_position(tiny):
    model, tok = tiny
    texts = ["the movie was great", "a dull , lifeless film that drags on", "unbelievably good"]
    together = mlm.pseudo_log_likelihood(model, tok, texts, batch_size=5, precision="fp32")
    alone = [mlm.pseudo_log_likelihood(model, tok, [t], precision="fp32")[0] for t in texts]
    assert together == pytest.approx(alone, abs=1e-4)
    assert all(s < 0 for s in together)
    window = mlm.pseudo_log_likelihood(model, tok, texts, positions=[[0, 1], [2, 3, 4], None], precision="fp32")
    rest = mlm.pseudo_log_likelihood(model, tok, texts, positions=[[2, 3], [0, 1, 5, 6, 7], []], precision="fp32")
    assert [w + r for w, r in zip(window, rest, strict=True)] == pytest.approx(together, abs=1e-4)
    assert rest[2] == 0.0


def test_masked_span_log_prob_masks_the_whole_word_and_shares_rows(tiny, monkeypatch):
    model, tok = tiny
    text = "the movie was great fun"
    # "fun" and "good" (one piece each) in the same context: one masked row; "snorkelling" has four
    items = [(text, (20, 23)), ("the movie was great good", (20, 24)), ("the movie was great snorkelling", (20, 31))]
    rows = []
    real = scoring.masked_logits
    monkeypatch.setattr(
        scoring, "masked_logits", lambda m, batch, where: rows.append(int(where.shape[0])) or real(m, batch, where)
    )
    fun, good, long = mlm.masked_span_log_prob(model, tok, items, precision="fp32")
    assert sum(rows) == 2  # two distinct masked inputs (one [MASK] and several), not three
    ids = tok(text)["input_ids"]
    masked = ids[:-2] + [tok.mask_token_id] + ids[-1:]
    with torch.no_grad():
        logp = torch.log_softmax(model(input_ids=torch.tensor([masked])).logits[0, -2], dim=-1)
    assert fun == pytest.approx(float(logp[ids[-2]]), abs=1e-4)
    assert good == pytest.approx(float(logp[tok.convert_tokens_to_ids("good")]), abs=1e-4)
    pieces = tok("snorkelling", add_special_tokens=False)["input_ids"]
    assert len(pieces) > 1 and long < min(fun, good)  # several pieces, each a log-probability below 0
    assert mlm.masked_span_log_prob(model, tok, [(text, (5, 5))]) == [0.0]  # an empty span scores nothing


def test_hub_loader_refuses_a_checkpoint_without_a_trained_head(tmp_path, tiny):
    _, tok = tiny
    torch.manual_seed(0)
    full = BertForMaskedLM(tiny_bert_config(vocab_size=len(tok)))
    full.save_pretrained(tmp_path / "full")
    tok.save_pretrained(tmp_path / "full")
    model, _ = mlm.load_masked_lm(str(tmp_path / "full"))
    assert model.mlm_source == str(tmp_path / "full")
    assert torch.equal(model.cls.predictions.transform.dense.weight, full.cls.predictions.transform.dense.weight)
    full.bert.save_pretrained(tmp_path / "encoder_only")  # like all-MiniLM-L6-v2: no cls.* weights
    tok.save_pretrained(tmp_path / "encoder_only")
    with pytest.raises(MissingResource, match="no trained masked-LM head"):
        mlm.load_masked_lm(str(tmp_path / "encoder_only"))


def test_configured_mlm_is_used_and_a_missing_one_is_reported(monkeypatch, tmp_path):
    monkeypatch.setenv(mlm.MLM_ENV, str(tmp_path / "nowhere"))
    with pytest.raises(MissingResource):
        mlm.load_masked_lm()


def test_damaged_head_file_is_refused(tmp_path):
    meta = mlm.head_metadata()
    copy = tmp_path / "head.safetensors"
    shutil.copy(mlm.HEAD_FILE, copy)
    assert mlm.verify_head_file(copy, meta) == meta["sha256"]
    data = bytearray(copy.read_bytes())
    data[-1] ^= 0xFF
    copy.write_bytes(bytes(data))
    with pytest.raises(RobustftError, match="sha256"):
        mlm.verify_head_file(copy, meta)
    with pytest.raises(MissingResource):
        mlm.verify_head_file(tmp_path / "absent.safetensors", meta)


def test_head_metadata_names_its_rebuild_command_and_heldout_accuracy():
    meta = json.loads(mlm.HEAD_META.read_text())
    assert meta["command"].startswith("python scripts/train_mlm_head.py")
    assert meta["heldout"]["trained"]["sst2_test"]["top10"] > meta["heldout"]["untrained"]["sst2_test"]["top10"]


# Fixed before the head was trained: a probe passes when any listed word is among the top 10 predictions.
# The shipped head passes 4 of 5; the restaurant probe fails (food is rare in its training text), see
# docs/mlm_head.md for every probe's top 10.
PROBES = [
    ("the movie was [MASK] .", {"good", "great", "bad", "terrible", "awful", "excellent", "fun", "boring"}),
    ("this is a [MASK] film .", {"good", "great", "bad", "terrible", "fine", "wonderful", "beautiful"}),
    ("the food at this restaurant was [MASK] .", {"good", "great", "bad", "delicious", "excellent", "terrible"}),
    ("the movie was [MASK] good .", {"very", "really", "so", "pretty", "quite", "too", "not"}),
    ("i [MASK] this movie .", {"love", "loved", "like", "liked", "hate", "hated", "enjoyed"}),
]


@pytest.mark.slow
def test_shipped_head_fills_masks_with_sensible_words():
    model, tok = mlm.load_masked_lm("minilm")
    assert "robustft MLM head" in model.mlm_source
    batch = pad_rows([dict(tok(text)) for text, _ in PROBES], tok.pad_token_id)
    where = batch["input_ids"] == tok.mask_token_id
    with torch.no_grad():
        top = mlm.masked_logits(model, batch, where).topk(10).indices
    failed = []
    for (text, sensible), ids in zip(PROBES, top, strict=True):
        guesses = tok.convert_ids_to_tokens(ids.tolist())
        if not sensible & set(guesses):
            failed.append(f"{text}: {guesses}")
    assert len(failed) <= 1, failed


@pytest.mark.slow
def test_offline_default_falls_back_to_the_shipped_head(monkeypatch):
    monkeypatch.delenv(mlm.MLM_ENV, raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    model, tok = mlm.load_masked_lm()
    if "robustft" not in model.mlm_source:
        pytest.skip(f"a hub MLM is reachable here ({model.mlm_source})")
    fluent, odd = mlm.pseudo_log_likelihood(
        model, tok, ["the movie was great fun .", "the movie was great fork ."], positions=[[4], [4]]
    )
    assert fluent > odd
