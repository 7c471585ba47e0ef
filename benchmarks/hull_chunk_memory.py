"""Memory and time of RIFT's hull search on an IM model, whole batch against chunks (`HullSettings.chunk`).

    python benchmarks/hull_chunk_memory.py     # -> benchmarks/results/hull_chunk_memory.json

The setting IM + RIFT trains (configs/rift-1000.yaml): MiniLM, IM on layers 4-6 (increment, dt 1, Anderson,
K 10), the search ascending the exact (unrolled) gradient, RIFT's hull (KL gain, entropy 15 / (300*128)),
counter-fitted neighbours, fp32, 1 thread; `--batch_size` seeded SST-2 subset-train sentences padded to the
recipe's 80 tokens (the worst case of its batches). Each configuration runs in its own process, so its peak
resident memory (ru_maxrss, above the loaded model and batch) is its own. Every chunked search is checked against
the whole-batch one: the largest difference of any weight (they agree up to float rounding).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import common

IM = {"arch": "im", "form": "increment", "dt": 1.0, "layers": "4-6", "solver": "anderson", "K": 10, "grad": "explicit"}


def measure(batch_size: int, chunk: int | None, gradients: str, steps: int) -> dict:
    import torch

    from robustft.adversary.candidates import CandidateBuilder
    from robustft.adversary.hull import HullSettings, kaiming_logits, kl_gain, optimise_weights
    from robustft.data.batching import collate, encode, model_inputs
    from robustft.data.tasks import get_task, load_examples
    from robustft.models.factory import load_classifier
    from robustft.models.im import convert

    torch.set_num_threads(1)
    torch.manual_seed(0)
    task = get_task("sst2")
    model, tok = load_classifier("minilm", task.label_names)
    convert(model, **IM)
    model.eval()
    examples = load_examples("sst2", "subset-train", n=batch_size, seed=0)
    batch = collate(encode(tok, examples, 80), tok.pad_token_id, pad_to=80)
    table = CandidateBuilder(tok, task).build(batch)
    init = kaiming_logits(tuple(table.slot_mask.shape), torch.Generator().manual_seed(0))
    with torch.no_grad():
        target = model(**model_inputs(batch)).logits
    settings = HullSettings(steps=steps, chunk=chunk)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    weights = optimise_weights(model, batch, table, kl_gain(target), settings, init=init, im_gradients=gradients)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "batch_size": batch_size,
        "chunk": chunk,
        "im_adversary_grad": gradients,
        "tokens": int(batch["input_ids"].numel()),
        "peak_mib_above_model": round((peak - base) / 1024, 1),
        "seconds_per_hull_step": round(seconds / steps, 2),
        "weights": weights.flatten().tolist(),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch_size", type=int, default=24)
    parser.add_argument("--chunks", default="6,12", help="chunk sizes measured besides the whole batch")
    parser.add_argument("--steps", type=int, default=2, help="hull steps (memory per step does not grow with them)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        chunk, gradients = json.loads(args.child)
        print(json.dumps(measure(args.batch_size, chunk, gradients, args.steps)))
        return 0
    configs = [(None, "exact"), *((int(c), "exact") for c in args.chunks.split(",")), (None, "model")]
    rows, whole = [], None
    for chunk, gradients in configs:
        command = [sys.executable, __file__, "--batch_size", str(args.batch_size), "--steps", str(args.steps)]
        load_before = common.load_average()
        out = subprocess.run([*command, "--child", json.dumps([chunk, gradients])], capture_output=True, text=True)
        if out.returncode:
            sys.stderr.write(out.stderr)
            return out.returncode
        row = json.loads(out.stdout.strip().splitlines()[-1])
        weights = row.pop("weights")
        if whole is None:
            whole = weights
        elif gradients == "exact":
            row["max_weight_difference_to_whole_batch"] = max(abs(a - b) for a, b in zip(weights, whole, strict=True))
        row["load_average_1m"] = [load_before, common.load_average()]
        rows.append(row)
        print(json.dumps(row), flush=True)
    common.save("hull_chunk_memory", {"setting": IM, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
