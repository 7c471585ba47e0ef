"""The genetic attack's two LM-filter scorers side by side: what each keeps and what each costs.

For N seeded SST-2 dev examples, every swap the genetic attack's filter sees with Jia et al.'s faster search (each
modifiable word's counter-fitted neighbours, on the original text) is scored by the window pseudo-log-likelihood
(`masked-lm-pll`, the default) and by the swapped word's masked log-probability (`masked-lm-word`), each with the
masked LM in fp32 and (`--bf16-scorers`) in bf16; all keep a swap when its score drops by at most 5 from the
original's. Reported: the share each keeps, how often they agree (and bf16 with fp32),
and each scorer's seconds against the victim's forward floor on the same swapped texts (the issue's bound: the
LM filter no more than its victim queries). Timings are interleaved per example, so both see the same load.

    python benchmarks/lm_filter_agreement.py --model RUN --n 50
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from common import forward_seconds, length_grouped, load_average, load_sst2_victim, save  # noqa: E402
from robustft.attacks.constraints.lm_filter import SCORERS, LanguageModelFilter  # noqa: E402
from robustft.attacks.recipes import build_attack  # noqa: E402
from robustft.attacks.victim import Victim  # noqa: E402
from robustft.attacks.words import AttackedText  # noqa: E402
from robustft.data.tasks import load_examples  # noqa: E402
from robustft.data.text import is_one_word  # noqa: E402
from robustft.models.mlm import load_masked_lm  # noqa: E402


def swaps_of(attack, text: AttackedText) -> list[AttackedText]:
    """The single-word swaps of the original text that reach the LM filter (stopwords and limits first)."""
    allowed = set(range(text.num_words))
    for c in attack.constraints:
        m = c.modifiable(text)
        if m is not None:
            allowed &= m
    words = attack.transformation.candidates(text, sorted(allowed))
    out = [
        text.replace_word(i, w)
        for i in sorted(allowed)
        for w in words.get(i, [])
        if w.lower() != text.words[i].lower() and is_one_word(w)
    ]
    for c in attack.constraints:
        out = c.filter(out, text, text) if out else out
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="minilm", help="run folder, model folder or alias")
    ap.add_argument("--n", type=int, default=50, help="SST-2 dev examples (seeded)")
    ap.add_argument("--precision", default="bf16", help="of the victim floor")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument(
        "--bf16-scorers", nargs="*", default=["masked-lm-pll"], choices=sorted(SCORERS), help="also timed in bf16"
    )
    ap.add_argument("--name", default="lm_filter_agreement")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    load_before = load_average()
    model, tok = load_sst2_victim(args.model)
    victim = Victim(model, tok, "sst2", precision=args.precision)
    attack = build_attack("genetic", victim, overrides={"lm_scorer": None})  # the swaps before the LM filter
    mlm, mlm_tok = load_masked_lm()
    filters = {kind: LanguageModelFilter(cls(mlm, mlm_tok), window=6, max_drop=5.0) for kind, cls in SCORERS.items()}
    for kind in args.bf16_scorers:  # the same scorer with the masked LM in bf16: does it decide the same?
        filters[f"{kind}@bf16"] = LanguageModelFilter(SCORERS[kind](mlm, mlm_tok, precision="bf16"), 6, 5.0)
    seconds = dict.fromkeys([*filters, "victim_floor"], 0.0)
    kept = {kind: 0 for kind in filters}
    both = neither = swaps_total = 0
    same_as_fp32 = {kind: 0 for kind in filters if kind.endswith("@bf16")}
    for example in load_examples("sst2", "dev", n=args.n, seed=0):
        text = AttackedText(example.text_a)
        swaps = swaps_of(attack, text)
        if not swaps:
            continue
        swaps_total += len(swaps)
        decided = {}
        for kind, lm_filter in filters.items():
            start = time.perf_counter()
            decided[kind] = {s.text for s in lm_filter.filter(swaps, text, text)}
            seconds[kind] += time.perf_counter() - start
            kept[kind] += len(decided[kind])
        pll, word = decided["masked-lm-pll"], decided["masked-lm-word"]
        for kind in same_as_fp32:
            same_as_fp32[kind] += len(swaps) - len(decided[kind] ^ decided[kind.removesuffix("@bf16")])
        both += len(pll & word)
        neither += sum(1 for s in swaps if s.text not in pll and s.text not in word)
        batches = length_grouped(tok, [(s.text, None) for s in swaps], 32, victim.max_length)
        seconds["victim_floor"] += forward_seconds(model, batches, args.precision)
    floor = max(seconds["victim_floor"], 1e-9)
    result = {
        "command": "python benchmarks/" + Path(__file__).name + " " + " ".join(sys.argv[1:]),
        "model": args.model,
        "examples": args.n,
        "swaps_scored": swaps_total,
        "kept_share": {k: round(v / max(swaps_total, 1), 4) for k, v in kept.items()},
        "agreement": round((both + neither) / max(swaps_total, 1), 4),
        "kept_by_both": both,
        "kept_by_neither": neither,
        "bf16_same_decision_as_fp32": {k: round(v / max(swaps_total, 1), 5) for k, v in same_as_fp32.items()},
        "seconds": {k: round(v, 3) for k, v in seconds.items()},
        "scorer_x_victim_floor": {k: round(seconds[k] / floor, 2) for k in filters},
        "load_average_before": load_before,
        "load_average_after": load_average(),
    }
    shown = ("swaps_scored", "kept_share", "agreement", "bf16_same_decision_as_fp32", "seconds")
    shown += ("scorer_x_victim_floor",)
    for key in shown:
        print(f"{key}: {result[key]}")
    save(args.name, result)


if __name__ == "__main__":
    main()
