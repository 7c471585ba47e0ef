"""Train the masked-LM head that all-MiniLM-L6-v2 lacks, and measure it on held-out text.

The shipped file was built with exactly (CPU, one thread; docs/mlm_head.md has times and results):

    ROBUSTFT_DATA=/path/to/shared/data HF_HUB_OFFLINE=1 python scripts/train_mlm_head.py \
        --head window --tokens 400000 --epochs 4 --positions-per-batch 512 \
        --out src/robustft/assets/minilm_mlm_head.safetensors

Measure only:  python scripts/train_mlm_head.py --eval-only [--head bert|window] [--head-file FILE]

BERT recipe: 15% of the word pieces are chosen, 80% -> [MASK], 10% -> a random piece, 10% kept; the
decoder is tied to MiniLM's word embeddings, which stay frozen. Only the head (transform + vocab bias)
and the top `--adapt-layers` encoder layers train, so the frozen layers run once: their outputs on the
masked text are cached and the trainable part is trained on the cache for several epochs.
`--head bert` is BERT's head; `--head window` (shipped) lets the transform also read the hidden states
of the two neighbouring positions, which MiniLM's states need to say which word fits a slot.

Training text: IMDB train, SST-2 train, and the train sets of SNLI (subset), MNLI/QQP (subsets), QNLI
(10% subset), RTE. Held-out evaluation: SST-2 test and AG News test (never trained on; MR is left
out of training because SST-2 test sentences come from it). Every chosen piece -> [MASK] for the
held-out top-1/top-10 accuracy.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shlex
import sys
import time
from pathlib import Path

import torch
from safetensors.torch import save_file
from transformers.masking_utils import create_bidirectional_mask

from robustft import resources
from robustft.data.batching import pad_rows
from robustft.data.tasks import load_examples
from robustft.models import mlm

SOURCES = {  # task -> share of the token budget (pairs are kept as pairs, like BERT's two segments)
    "imdb": 0.45,
    "sst2": 0.15,
    "snli": 0.10,
    "mnli": 0.10,
    "qnli": 0.10,
    "qqp": 0.05,
    "rte": 0.05,
}
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def log(*parts):
    print(*parts, flush=True)


# --- text --------------------------------------------------------------------------------------


def imdb_windows(tokenizer, rng: random.Random, budget: int, max_length: int) -> list[str]:
    """Sentence-aligned windows of IMDB train reviews, one per sampled review, <= max_length pieces."""
    reviews = [ex.text_a for ex in load_examples("imdb", "train")]
    rng.shuffle(reviews)
    out, used = [], 0
    for review in reviews:
        if used >= budget:
            break
        sentences = [s for s in SENTENCE_END.split(review.replace("<br />", " ")) if s.strip()]
        start = rng.randrange(len(sentences))
        window, length = [], 0
        for sentence in sentences[start:]:
            n = len(tokenizer.tokenize(sentence))
            if window and length + n > max_length - 2:
                break
            window.append(sentence)
            length += n
        out.append(" ".join(window))
        used += min(length, max_length - 2)
    return out


def task_texts(task: str, tokenizer, rng: random.Random, budget: int) -> list:
    """Seeded sample of a task's train texts (pairs as pairs) up to `budget` word pieces."""
    examples = list(load_examples(task, "train"))
    if task == "sst2":  # SST-2 train is mostly short sub-phrases: keep the ones that read like text
        examples = [ex for ex in examples if len(ex.text_a.split()) >= 6]
    rng.shuffle(examples)
    out, used = [], 0
    for ex in examples:
        if used >= budget:
            break
        text = (ex.text_a, ex.text_b) if ex.text_b else ex.text_a
        out.append(text)
        used += len(tokenizer.tokenize(ex.text_a)) + (len(tokenizer.tokenize(ex.text_b)) if ex.text_b else 0)
    return out


def training_texts(tokenizer, budget: int, max_length: int, seed: int, held_out: set[str]) -> list:
    rng = random.Random(seed)
    texts = []
    for task, share in SOURCES.items():
        part = int(budget * share)
        if task == "imdb":
            got = imdb_windows(tokenizer, rng, part, max_length)
        else:
            got = task_texts(task, tokenizer, rng, part)
        log(f"  {task}: {len(got)} texts")
        texts += got
    before = len(texts)
    texts = [t for t in texts if normalise(t if isinstance(t, str) else t[0]) not in held_out]
    log(f"  dropped {before - len(texts)} texts equal to a held-out evaluation text")
    rng.shuffle(texts)
    return texts


def normalise(text: str) -> str:
    return " ".join(text.lower().split())


def held_out_sets(n_ag: int, seed: int) -> dict[str, list[str]]:
    return {
        "sst2_test": [ex.text_a for ex in load_examples("sst2", "test")],
        "ag_news_test": [ex.text_a for ex in load_examples("ag_news", "test", n=n_ag, seed=seed)],
    }


# --- the frozen part runs once: cache its outputs on the masked text ---------------------------


def frozen_prefix(model, batch, n_frozen: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Hidden states after the first `n_frozen` encoder layers, and the layer attention mask."""
    bert = model.bert
    hidden = bert.embeddings(input_ids=batch["input_ids"], token_type_ids=batch.get("token_type_ids"))
    mask = create_bidirectional_mask(config=bert.config, inputs_embeds=hidden, attention_mask=batch["attention_mask"])
    for layer in bert.encoder.layer[:n_frozen]:
        hidden = layer(hidden, mask)
    return hidden, mask


@torch.no_grad()
def build_cache(
    model,
    tokenizer,
    texts,
    n_frozen: int,
    keep_sequences: bool,
    max_length: int,
    seed: int,
    window: bool,
    batch_size: int = 64,
):
    """Masked training units: (hidden at masked pieces, labels) or whole sequences when layers adapt."""
    generator = torch.Generator().manual_seed(seed)
    random_ids = mlm.replacement_ids(tokenizer)
    enc = mlm.encode(tokenizer, texts, max_length)
    rows = [{k: enc[k][i] for k in enc.keys()} for i in range(len(texts))]
    order = sorted(range(len(rows)), key=lambda i: len(rows[i]["input_ids"]))  # little padding
    units, counts = [], torch.zeros(len(tokenizer), dtype=torch.long)
    for start in range(0, len(order), batch_size):
        batch = pad_rows([rows[i] for i in order[start : start + batch_size]], tokenizer.pad_token_id)
        counts += torch.bincount(batch["input_ids"][batch["attention_mask"].bool()], minlength=len(tokenizer))
        inputs, labels = mlm.mask_for_mlm(
            batch["input_ids"], batch["special_tokens_mask"].bool(), tokenizer.mask_token_id, random_ids, generator
        )
        batch["input_ids"] = inputs
        with torch.autocast("cpu", dtype=torch.bfloat16):
            hidden, _ = frozen_prefix(model, batch, n_frozen)
        hidden = hidden.to(torch.bfloat16)
        if keep_sequences:
            for j, length in enumerate(batch["attention_mask"].sum(1).tolist()):
                units.append((hidden[j, :length].clone(), labels[j, :length].clone()))
        else:
            where = labels != -100
            features = mlm.window_features(hidden, where) if window else hidden[where]
            units.append((features.clone(), labels[where].clone()))
    if not keep_sequences:  # one tensor of masked positions, one of their labels
        units = (torch.cat([u[0] for u in units]), torch.cat([u[1] for u in units]))
    return units, counts


def split_units(units, fraction: float, seed: int):
    """A seeded validation slice of the cache (positions or sequences) and the rest."""
    if isinstance(units, tuple):
        order = torch.randperm(len(units[1]), generator=torch.Generator().manual_seed(seed))
        n_val = max(1, int(len(order) * fraction))
        return (units[0][order[n_val:]], units[1][order[n_val:]]), (units[0][order[:n_val]], units[1][order[:n_val]])
    units = list(units)
    random.Random(seed).shuffle(units)
    n_val = max(1, int(len(units) * fraction))
    return units[n_val:], units[:n_val]


def unit_count(units) -> int:
    return len(units[1]) if isinstance(units, tuple) else len(units)


# --- training ----------------------------------------------------------------------------------


def position_batches(units, batch_size: int, rng: random.Random):
    hidden, labels = units
    order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(rng.randrange(1 << 30)))
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        yield hidden[idx], labels[idx], None


def sequence_batches(units, tokens_per_batch: int, rng: random.Random):
    """Length-bucketed batches of whole cached sequences (the adapted layers need every position)."""
    order = list(range(len(units)))
    rng.shuffle(order)
    batches = []
    for chunk_start in range(0, len(order), 2000):
        chunk = sorted(order[chunk_start : chunk_start + 2000], key=lambda i: len(units[i][1]))
        batch = []
        for i in chunk:
            if batch and (len(batch) + 1) * len(units[i][1]) > tokens_per_batch:
                batches.append(batch)
                batch = []
            batch.append(i)
        if batch:
            batches.append(batch)
    rng.shuffle(batches)
    for idx in batches:
        width = max(len(units[i][1]) for i in idx)
        hidden = torch.zeros(len(idx), width, units[idx[0]][0].shape[-1], dtype=torch.bfloat16)
        labels = torch.full((len(idx), width), -100)
        attention = torch.zeros(len(idx), width, dtype=torch.long)
        for row, i in enumerate(idx):
            n = len(units[i][1])
            hidden[row, :n], labels[row, :n], attention[row, :n] = units[i][0], units[i][1], 1
        yield hidden, labels, attention


def unit_loss(model, hidden, labels, attention, n_frozen: int):
    hidden = hidden.float()
    if attention is not None:
        mask = create_bidirectional_mask(config=model.config, inputs_embeds=hidden, attention_mask=attention)
        for layer in model.bert.encoder.layer[n_frozen:]:
            hidden = layer(hidden, mask)
        where = labels != -100
        return torch.nn.functional.cross_entropy(
            mlm.head_at(model.cls, hidden, where).float(), labels[where], reduction="sum"
        ), int(where.sum())
    logits = model.cls.predictions(hidden)  # cached positions: the head's input is ready
    return torch.nn.functional.cross_entropy(logits.float(), labels, reduction="sum"), len(labels)


def trainable_parameters(model, n_adapt: int):
    for p in model.parameters():
        p.requires_grad_(False)
    head = [
        model.cls.predictions.transform.dense.weight,
        model.cls.predictions.transform.dense.bias,
        model.cls.predictions.transform.LayerNorm.weight,
        model.cls.predictions.transform.LayerNorm.bias,
        model.cls.predictions.bias,
    ]
    layers = [
        p for layer in model.bert.encoder.layer[len(model.bert.encoder.layer) - n_adapt :] for p in layer.parameters()
    ]
    for p in head + layers:
        p.requires_grad_(True)
    return head, layers


def train(model, units, args, n_frozen: int, val_units):
    head, layers = trainable_parameters(model, args.adapt_layers)
    groups = [{"params": head, "lr": args.lr}] + ([{"params": layers, "lr": args.layer_lr}] if layers else [])
    optimizer = torch.optim.AdamW(groups, weight_decay=0.01)
    rng = random.Random(args.seed)

    def batches():
        if args.adapt_layers:
            return sequence_batches(units, args.tokens_per_batch, rng)
        return position_batches(units, args.positions_per_batch, rng)

    steps_per_epoch = sum(1 for _ in batches())
    total = steps_per_epoch * args.epochs
    warmup = max(1, int(0.05 * total))
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min((s + 1) / warmup, max(0.0, (total - s) / max(1, total - warmup)))
    )
    step = 0
    for epoch in range(args.epochs):
        model.train()
        started, seen, loss_sum = time.time(), 0, 0.0
        for hidden, labels, attention in batches():
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss, n = unit_loss(model, hidden, labels, attention, n_frozen)
            if n == 0:
                continue
            (loss / n).backward()
            optimizer.step()
            schedule.step()
            optimizer.zero_grad(set_to_none=True)
            loss_sum, seen, step = loss_sum + loss.item(), seen + n, step + 1
            if step % 100 == 0:
                log(f"  step {step}/{total} train loss {loss_sum / seen:.3f} ({time.time() - started:.0f}s)")
        log(
            f"epoch {epoch + 1}: train loss {loss_sum / max(seen, 1):.3f}, val loss "
            f"{validation_loss(model, val_units, args, n_frozen):.3f}, {time.time() - started:.0f}s"
        )
    model.eval()


@torch.no_grad()
def validation_loss(model, units, args, n_frozen: int) -> float:
    model.eval()
    rng = random.Random(0)
    gen = (
        sequence_batches(units, args.tokens_per_batch, rng)
        if args.adapt_layers
        else position_batches(units, args.positions_per_batch, rng)
    )
    total, count = 0.0, 0
    for hidden, labels, attention in gen:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss, n = unit_loss(model, hidden, labels, attention, n_frozen)
        total, count = total + loss.item(), count + n
    model.train()
    return total / max(count, 1)


def init_bias_to_unigram(model, counts: torch.Tensor):
    """Start the vocab bias at log unigram frequencies: the head then only learns the context part."""
    with torch.no_grad():
        model.cls.predictions.bias.copy_(torch.log((counts.float() + 1.0) / (counts.sum() + len(counts))))


def save_head(model, n_adapt: int, path: Path, meta: dict):
    state = {k: v for k, v in model.state_dict().items() if k.startswith("cls.predictions.") and "decoder" not in k}
    n_layers = model.config.num_hidden_layers
    adapted = tuple(f"bert.encoder.layer.{i}." for i in range(n_layers - n_adapt, n_layers))
    state.update({k: v for k, v in model.state_dict().items() if n_adapt and k.startswith(adapted)})
    state = {k: v.detach().to(torch.float16).contiguous() for k, v in state.items()}
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(state, str(path), metadata={"base": resources.MINILM_HUB_NAME, "adapted_layers": str(n_adapt)})
    meta = {
        **meta,
        "file": path.name,
        "sha256": resources.file_sha256.__wrapped__(str(path)),
        "bytes": path.stat().st_size,
        "tensors": len(state),
    }
    path.with_suffix(".json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    log(f"saved {path} ({path.stat().st_size / 1e6:.2f} MB, sha256 {meta['sha256']})")
    return meta


def evaluate(model, tokenizer, sets, label: str) -> dict:
    out = {}
    for name, texts in sets.items():
        started = time.time()
        out[name] = mlm.masked_token_accuracy(model, tokenizer, texts, seed=0)
        r = out[name]
        log(
            f"[{label}] {name}: top1 {r['top1']:.4f} top10 {r['top10']:.4f} loss {r['loss']:.3f} "
            f"({r['tokens']} masked pieces, {time.time() - started:.0f}s)"
        )
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, help="where to write the head (.safetensors; a .json goes next to it)")
    parser.add_argument(
        "--head",
        choices=sorted(mlm.HEAD_KINDS),
        default="window",
        help="bert: BERT's head; window: its transform also reads the neighbouring positions",
    )
    parser.add_argument("--adapt-layers", type=int, default=0, help="top encoder layers trained with the head")
    parser.add_argument("--tokens", type=int, default=1_000_000, help="training text budget in word pieces")
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--lr", type=float, default=2e-3, help="head learning rate")
    parser.add_argument("--layer-lr", type=float, default=3e-4, help="adapted layers' learning rate")
    parser.add_argument("--positions-per-batch", type=int, default=1024)
    parser.add_argument("--tokens-per-batch", type=int, default=4096)
    parser.add_argument("--val-fraction", type=float, default=0.02)
    parser.add_argument("--n-ag-news", type=int, default=1000, help="AG News test texts in the held-out set")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--eval-only", action="store_true", help="measure the untrained head (or --head-file) only")
    parser.add_argument("--head-file", type=Path, help="with --eval-only: a trained head file to measure")
    parser.add_argument("--skip-untrained", action="store_true", help="do not measure the untrained head")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)

    model, tokenizer = mlm.minilm_mlm(seed=args.seed, head=args.head)
    sets = held_out_sets(args.n_ag_news, args.seed)
    results = {}
    if args.eval_only:
        if args.head_file:
            from safetensors.torch import load_file

            mlm.apply_head(model, load_file(args.head_file))
        evaluate(model, tokenizer, sets, str(args.head_file or "untrained head"))
        return 0
    if not args.out:
        parser.error("--out is required unless --eval-only")
    if not args.skip_untrained:
        results["untrained"] = evaluate(model, tokenizer, sets, "untrained head")

    started = time.time()
    held_out = {normalise(t) for texts in sets.values() for t in texts}
    log("collecting training text")
    texts = training_texts(tokenizer, args.tokens, args.max_length, args.seed, held_out)
    n_frozen = model.config.num_hidden_layers - args.adapt_layers
    log(f"caching the output of the {n_frozen} frozen layers on {len(texts)} masked texts")
    units, counts = build_cache(
        model,
        tokenizer,
        texts,
        n_frozen,
        args.adapt_layers > 0,
        args.max_length,
        args.seed,
        window=args.head == "window",
    )
    cache_s = time.time() - started
    units, val_units = split_units(units, args.val_fraction, args.seed)
    log(f"cache: {unit_count(units)} training units, {unit_count(val_units)} validation units, {cache_s:.0f}s")
    init_bias_to_unigram(model, counts)
    train(model, units, args, n_frozen, val_units)
    train_s = time.time() - started
    label = f"trained head, {args.adapt_layers} adapted layer(s)"
    results["trained"] = evaluate(model, tokenizer, sets, label)
    meta = {
        "backbone": resources.MINILM_HUB_NAME,
        "backbone_sha256": resources.file_sha256(str(Path(resources.resolve_model("minilm")) / mlm.BACKBONE_WEIGHTS)),
        "head": args.head,
        "adapted_layers": args.adapt_layers,
        "dtype": "float16",
        "command": "python scripts/train_mlm_head.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:])),
        "training": {
            "texts": len(texts),
            "sources": SOURCES,
            "tokens_budget": args.tokens,
            "epochs": args.epochs,
            "lr": args.lr,
            "layer_lr": args.layer_lr,
            "seed": args.seed,
            "cache_seconds": round(cache_s),
            "total_seconds": round(train_s),
            "threads": args.threads,
        },
        "heldout": results,
    }
    save_head(model, args.adapt_layers, args.out, meta)
    return 0


if __name__ == "__main__":
    sys.exit(main())
