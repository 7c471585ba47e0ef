"""Is an embedding adversary as strong under bf16 autocast (how CPU training runs by default) as in fp32? Its steps
are small next to bf16's 8-bit mantissa: PGD's init is about 5e-4 per element, a FreeLB++ step about 3e-4.

    python benchmarks/adversary_precision.py [--model runs/bench/im-powered/cells/bert-sst2-subset-s0] [--batches 4]

On batches of 32 SST-2 training examples (length-grouped, as the loop draws them), in eval mode (no dropout, so
the two precisions see the same function), from the same random start: the cross-entropy each adversary reaches
in fp32 and under bf16 autocast, both scored in fp32, and the cosine between the two final perturbations. The
adversaries are PGD's (5 steps of 0.03, init 0.05) and FreeLB++'s ascent on SST-2 (30 steps of 0.03, init 0.05),
TextDefender's settings. Prints and saves benchmarks/results/adversary_precision.json.
"""

from __future__ import annotations

import argparse
import statistics

import torch
import torch.nn.functional as F

from common import load_sst2_victim, save
from robustft import runtime
from robustft.adversary.embedding_delta import DeltaSettings, ascend, ce_gain
from robustft.adversary.embeds import forward_embeds, word_embeddings
from robustft.data.batching import collate, encode, epoch_batches
from robustft.data.tasks import load_examples

ADVERSARIES = {
    "pgd": DeltaSettings(5, 0.03, 0.05, 0.0, "l2"),
    "freelbpp-sst2": DeltaSettings(30, 0.03, 0.05, 0.0, "l2"),
}


def measure(model, batch, settings: DeltaSettings, seed: int) -> dict:
    labels, device = batch["labels"], torch.device("cpu")
    embeds = word_embeddings(model, batch).detach()
    mask = batch["attention_mask"].float()
    deltas = {}
    for precision in ("fp32", "bf16"):
        torch.manual_seed(seed)  # the same random start in both
        with runtime.autocast(device, precision):
            deltas[precision] = ascend(model, batch, embeds, mask, ce_gain(labels), settings)
    with torch.no_grad():
        ce = {
            p: F.cross_entropy(forward_embeds(model, batch, embeds + d).float(), labels).item()
            for p, d in deltas.items()
        }
        clean = F.cross_entropy(forward_embeds(model, batch, embeds).float(), labels).item()
    cosine = F.cosine_similarity(deltas["fp32"].flatten(1), deltas["bf16"].flatten(1), dim=1).mean().item()
    return {"clean_ce": clean, "adv_ce_fp32": ce["fp32"], "adv_ce_bf16": ce["bf16"], "cosine": cosine}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="runs/bench/im-powered/cells/bert-sst2-subset-s0")
    parser.add_argument("--batches", type=int, default=4)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model, tok = load_sst2_victim(args.model)
    items = encode(tok, list(load_examples("sst2", "subset-train")), 128)
    chosen = epoch_batches(items, 32, 0, 0, True, False)[: args.batches]
    rows = {name: [] for name in ADVERSARIES}
    for k, indices in enumerate(chosen):
        batch = collate([items[i] for i in indices], tok.pad_token_id)
        for name, settings in ADVERSARIES.items():
            row = measure(model, batch, settings, seed=k)
            rows[name].append(row)
            print(name, k, {key: round(v, 4) for key, v in row.items()})
    summary = {}
    for name, found in rows.items():
        gain = {p: statistics.mean(r[f"adv_ce_{p}"] - r["clean_ce"] for r in found) for p in ("fp32", "bf16")}
        summary[name] = {
            "ce_gain_fp32": round(gain["fp32"], 4),
            "ce_gain_bf16": round(gain["bf16"], 4),
            "bf16_over_fp32": round(gain["bf16"] / gain["fp32"], 3),
            "mean_cosine": round(statistics.mean(r["cosine"] for r in found), 3),
        }
        print(name, summary[name])
    save(
        "adversary_precision",
        {"model": args.model, "batches": args.batches, "batch_size": 32, "summary": summary, "rows": rows},
    )


if __name__ == "__main__":
    main()
