"""Can the victim's floor itself go lower? Forward time of the same length-grouped batches under each
candidate back-end, interleaved and repeated in one process, and how far each one's predictions move.

    nice -n 10 python benchmarks/victim_floor.py --model RUN --n 256 --repeats 2

Back-ends: fp32 (the reference), bf16 autocast (what precision=auto runs on CPU), dynamic int8
quantisation of every Linear (torch.ao.quantization.quantize_dynamic, fp32 activations), torch.compile
of the fp32 and bf16 model (dynamic shapes; the compiling pass is timed apart), and onnxruntime (fp32,
the model exported with torch.onnx's TorchScript exporter; `--ort-path` names a `pip install --target`
folder holding onnxruntime and onnx, so the project's environment is left alone).
Inputs: SST-2 dev sentences and, for each, copies with one word swapped for a counter-fitted
neighbour (what an attack queries), length-grouped into batches of `--batch-size`.
Agreement: the share of rows whose predicted class equals fp32's, and the largest probability change.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import forward_seconds, length_grouped, load_average, load_sst2_victim, save  # noqa: E402
from robustft import resources  # noqa: E402
from robustft.attacks.words import AttackedText  # noqa: E402
from robustft.data.batching import model_inputs  # noqa: E402
from robustft.data.tasks import load_examples  # noqa: E402


def attack_like_inputs(n: int, seed: int = 0) -> list[tuple[str, None]]:
    """n texts: SST-2 dev sentences, each followed by up to 3 one-word swaps from the counter-fitted file."""
    table, rng, out = resources.counterfitted_neighbors(), random.Random(seed), []
    for e in load_examples("sst2", "dev", n=n, seed=seed):
        text = AttackedText(e.text_a)
        out.append((text.text, None))
        options = [(i, w) for i, word in enumerate(text.words) for w in table.get(word.lower(), [])[:2]]
        for i, w in rng.sample(options, min(3, len(options))):
            out.append((text.replace_word(i, w).text, None))
        if len(out) >= n:
            break
    return out[:n]


class OnnxRuntimeModel(torch.nn.Module):
    """The classifier exported to ONNX (TorchScript exporter, dynamic batch and length) run by onnxruntime."""

    def __init__(self, model, example: dict, threads: int, path: str, ort_path: str | None):
        super().__init__()
        if ort_path:
            sys.path.append(ort_path)  # after the venv: its numpy wins
        import onnxruntime

        names = [k for k in ("input_ids", "attention_mask", "token_type_ids") if k in example]

        class Logits(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.model = model  # a submodule: its weights export as initialisers

            def forward(self, *args):
                return self.model(**dict(zip(names, args, strict=True))).logits

        torch.onnx.export(
            Logits(),
            tuple(example[k] for k in names),
            path,
            input_names=names,
            output_names=["logits"],
            dynamic_axes={k: {0: "batch", 1: "length"} for k in names},
            dynamo=False,
        )
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
        self.session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        self.names, self.version = names, onnxruntime.__version__

    def forward(self, **inputs):
        feed = {k: inputs[k].numpy() for k in self.names}
        return SimpleNamespace(logits=torch.from_numpy(self.session.run(["logits"], feed)[0]))


def probs(model, batches, precision) -> torch.Tensor:
    from robustft import runtime

    model.eval()  # the ONNX exporter restores its wrapper's train mode, which reaches the wrapped model
    with torch.no_grad(), runtime.autocast(runtime.model_device(model), precision):
        return torch.cat([torch.softmax(model(**model_inputs(b)).logits.float(), -1) for b in batches])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="minilm")
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--backends", nargs="+", default=["fp32", "bf16", "int8-dynamic", "compile-fp32", "compile-bf16"])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--ort-path", default=None, help="a folder with onnxruntime and onnx (pip install --target)")
    ap.add_argument("--name", default="victim_floor")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    load_before = load_average()
    model, tok = load_sst2_victim(args.model)
    batches = length_grouped(tok, attack_like_inputs(args.n), args.batch_size, 512)
    backends, compile_s = {}, {}
    for name in args.backends:
        if name in ("fp32", "bf16"):
            backends[name] = (model, name)
        elif name == "int8-dynamic":
            quantized = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
            backends[name] = (quantized, "fp32")
        elif name == "onnxruntime":
            path = str(Path(tempfile.mkdtemp()) / "victim.onnx")
            backends[name] = (
                OnnxRuntimeModel(model, model_inputs(batches[0]), args.threads, path, args.ort_path),
                "fp32",
            )
        elif name.startswith("compile-"):
            precision = name.split("-")[1]
            compiled = torch.compile(model, dynamic=True)
            start = time.perf_counter()
            forward_seconds(compiled, batches, precision)  # compiles (and recompiles per new shape family)
            compile_s[name] = round(time.perf_counter() - start, 2)
            backends[name] = (compiled, precision)
    reference = probs(model, batches, "fp32")
    rows = []
    for repeat in range(args.repeats):
        for name, (net, precision) in backends.items():
            seconds = forward_seconds(net, batches, precision)
            rows.append(
                {
                    "backend": name,
                    "repeat": repeat,
                    "seconds": round(seconds, 3),
                    "ms_per_row": round(1000 * seconds / args.n, 3),
                }
            )
            print(rows[-1], flush=True)
    fp32 = {r["repeat"]: r["seconds"] for r in rows if r["backend"] == "fp32"}
    for r in rows:
        r["x_fp32_same_repeat"] = round(r["seconds"] / fp32[r["repeat"]], 3) if r["repeat"] in fp32 else None
    agreement = {}
    for name, (net, precision) in backends.items():
        p = probs(net, batches, precision)
        agreement[name] = {
            "same_prediction": round(float((p.argmax(-1) == reference.argmax(-1)).float().mean()), 4),
            "max_abs_prob_change": round(float((p - reference).abs().max()), 5),
        }
    print(agreement)
    save(
        args.name,
        {
            "command": "python benchmarks/victim_floor.py " + " ".join(sys.argv[1:]),
            "model": args.model,
            "rows_forwarded": args.n,
            "batch_size": args.batch_size,
            "load_average_before": load_before,
            "load_average_after": load_average(),
            "compile_first_pass_s": compile_s,
            "agreement_with_fp32": agreement,
            "runs": rows,
        },
    )


if __name__ == "__main__":
    main()
