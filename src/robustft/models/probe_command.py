"""`robustft probe`: hidden-state distance per layer under word swaps or embedding noise, for several models
(e.g. BERT, EX-BERT, IM-BERT), with the IM solver's residual; writes probe.json and probe.png."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

EXAMPLES = """examples:
  robustft probe --model BERT=runs/bert/best --model IM-BERT=runs/im/best --output probe/
  robustft probe --base minilm --variants plain,ex,im --im.layers 1-6 --im.K 3 --perturb noise --noise 0.05
Run folders may be given for --model (their best/ model is used). Layers are 1-based."""


def add_parser(subparsers) -> None:
    from robustft.models.im_settings import add_im_arguments

    p = subparsers.add_parser("probe", help="hidden-state distance per layer under perturbations (IM-BERT probe)",
                              description=__doc__, epilog=EXAMPLES,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", action="append", default=[], metavar="[NAME=]PATH",
                   help="a saved model or run folder (repeatable)")
    p.add_argument("--base", help="one checkpoint to probe as several --variants (alias, folder or hub name)")
    p.add_argument("--variants", default="plain,ex,im", help="with --base: plain, ex and/or im (uses --im.*)")
    p.add_argument("--task", default="sst2")
    p.add_argument("--split", default="dev")
    p.add_argument("-n", type=int, default=200, help="seeded sample of n texts")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--perturb", choices=["swap", "noise"], default="swap")
    p.add_argument("--swaps", type=int, default=1, help="words swapped per text (counter-fitted neighbours)")
    p.add_argument("--noise", type=float, default=0.05, help="std of the word-embedding noise")
    p.add_argument("--max_length", type=int, default=128)
    p.add_argument("--output", default="probe", help="folder for probe.json and probe.png")
    add_im_arguments(p)
    p.set_defaults(func=run)


def load_models(args) -> dict:
    from robustft.data.tasks import get_task
    from robustft.errors import ConfigError
    from robustft.evaluate.command import resolve_saved_model
    from robustft.models.factory import load_classifier
    from robustft.models.im import convert
    from robustft.models.im_settings import settings_from_args

    models = {}
    for spec in args.model:
        name, _, path = spec.rpartition("=")
        reference, _ = resolve_saved_model(path)
        models[name or Path(path).name] = load_classifier(reference)
    if args.base:
        labels = get_task(args.task).label_names
        for variant in args.variants.split(","):
            if variant not in ("plain", "ex", "im"):
                raise ConfigError(f"unknown variant '{variant}': use plain, ex or im")
            model, tok = load_classifier(args.base, labels)
            if variant != "plain":
                convert(model, arch=variant, **settings_from_args(args))
            models[{"plain": "BERT", "ex": "EX-BERT", "im": "IM-BERT"}[variant]] = (model, tok)
    if not models:
        raise ConfigError("give --model PATH (repeatable) or --base MODEL --variants plain,ex,im")
    return models


def run(args) -> int:
    import torch

    from robustft.data.tasks import get_task, load_examples
    from robustft.models.im import settings_of
    from robustft.models.probe import noise_pairs, plot, probe, swap_pairs

    task = get_task(args.task)
    texts = [e.field(task.perturb_field) for e in load_examples(args.task, args.split, n=args.n, seed=args.seed)]
    pairs = swap_pairs(texts, args.swaps, args.seed) if args.perturb == "swap" else noise_pairs(texts)
    noise = args.noise if args.perturb == "noise" else 0.0
    torch.manual_seed(args.seed)
    results, settings = {}, {}
    for name, (model, tok) in load_models(args).items():
        results[name] = probe(model, tok, pairs, noise_std=noise, seed=args.seed, max_length=args.max_length)
        im = settings_of(model)
        settings[name] = im.to_dict() if im else None
        last = results[name]["distance_mean"][-1]
        print(f"{name:<12} last-layer distance {last:.4f}  per layer "
              + " ".join(f"{d:.3f}" for d in results[name]["distance_mean"]))
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    what = f"{args.swaps} counter-fitted swap(s)" if args.perturb == "swap" else f"embedding noise std {noise}"
    record = {"task": args.task, "split": args.split, "n_pairs": len(pairs), "perturbation": what,
              "seed": args.seed, "settings": settings, "results": results}
    (out / "probe.json").write_text(json.dumps(record, indent=2))
    plot(results, out / "probe.png", title=f"{args.task} {args.split}: {len(pairs)} pairs, {what}")
    print(f"wrote {out / 'probe.json'} and {out / 'probe.png'}")
    return 0
