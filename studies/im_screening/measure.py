"""The measurements: per setting, the solver's residuals, the hidden-state distances under one word swap and
under embedding noise, and the forward's CPU cost against plain; and the stages that choose what to measure next."""

from __future__ import annotations

import time
from pathlib import Path

import torch

from robustft.data.tasks import load_examples
from robustft.models.factory import load_classifier
from robustft.models.im import convert, unconvert
from robustft.models.probe import pooled_hidden_states, swap_pairs
from studies.im_screening.records import append, converged, ranked, read
from studies.im_screening.settings import (
    BASE,
    FORMS_DTS,
    LAYER_OPTIONS,
    NOISE_STD,
    SEED,
    STAGE_A,
    STAGE_A_LATE,
    ex_of,
    key,
)


class Screen:
    def __init__(self, results: Path, n: int):
        torch.set_num_threads(1)
        torch.manual_seed(SEED)
        self.results = results
        self.done = {r["key"]: r for r in read(results)}
        self.model, self.tok = load_classifier("minilm", ("negative", "positive"))
        self.model.eval()
        texts = [e.text_a for e in load_examples("sst2", "dev", n=n, seed=SEED)]
        self.pairs = swap_pairs(texts, swaps=1, seed=SEED)
        self.clean = [p.clean for p in self.pairs]
        self.plain_cpu = None

    def passes(self, setting: dict) -> dict:
        if setting["arch"] == "plain":
            unconvert(self.model)
        else:
            convert(self.model, arch=setting["arch"], **{k: v for k, v in setting.items() if k != "arch"})
        timed = []

        def run(texts, noise):
            wall, cpu = time.perf_counter(), time.process_time()
            out = pooled_hidden_states(self.model, self.tok, texts, noise_std=noise, seed=SEED)
            timed.append((time.perf_counter() - wall, time.process_time() - cpu))
            return out

        clean, residuals = run(self.clean, 0.0)
        swapped, _ = run([p.perturbed for p in self.pairs], 0.0)
        noised, _ = run(self.clean, NOISE_STD)
        out = {
            "n_pairs": len(self.pairs),
            "swap": distances(clean, swapped),
            "noise": distances(clean, noised),
            "clean_cpu_s": min(timed[0][1], timed[2][1]),
            "clean_wall_s": min(timed[0][0], timed[2][0]),
            "total_cpu_s": sum(c for _, c in timed),
        }
        layers = {}
        for name in residuals[0]:
            solves = [b[name] for b in residuals if b[name]["residual"]]
            if solves:  # batch-size-weighted means of the per-batch residual curves
                sizes = [min(32, len(self.clean) - 32 * i) for i in range(len(residuals))]
                curve = [
                    sum(s * b["residual"][k] for s, b in zip(sizes, solves, strict=True)) / sum(sizes)
                    for k in range(len(solves[0]["residual"]))
                ]
                layers[name] = {
                    "start": curve[0],
                    "end": curve[-1],
                    "curve": curve,
                    "diverged": sum(b["diverged"] for b in solves),
                }
        out["residual"] = layers
        return out

    def measure(self, setting: dict) -> dict:
        k = key(setting)
        if k in self.done:
            return self.done[k]
        if self.plain_cpu is None:  # cost ratios against plain measured in the same process (load drifts)
            self.plain_cpu = self.passes({"arch": "plain"})["clean_cpu_s"]
        record = {"key": k, "setting": setting, **self.passes(setting), "plain_cpu_s": self.plain_cpu}
        record["cost_x_plain"] = record["clean_cpu_s"] / self.plain_cpu
        append(self.results, record)
        self.done[k] = record
        res = max((r["end"] for r in record["residual"].values()), default=float("nan"))
        print(
            f"{k:55s} swap {record['swap']['mean'][-1]:.4f} noise {record['noise']['mean'][-1]:.4f} "
            f"residual {res:.3f} x{record['cost_x_plain']:.1f} ({record['total_cpu_s']:.0f} cpu s)",
            flush=True,
        )
        return record


def distances(clean, perturbed) -> dict:
    d = (perturbed - clean).norm(dim=-1) / clean.norm(dim=-1).clamp_min(1e-12)  # (layers + 1, n)
    mean = d.mean(dim=1).tolist()
    return {
        "mean": mean,
        "std": d.std(dim=1).tolist(),
        "last": d[-1].tolist(),
        "amplification": [b / a for a, b in zip(mean, mean[1:], strict=False)],
    }


def run_stages(screen: Screen, stages: str) -> None:
    m = screen.measure
    m({"arch": "plain"})
    if "A" in stages:
        m({"arch": "ex", **BASE})
        for solver in STAGE_A:
            m({"arch": "im", **BASE, **solver})
    if "B" in stages:
        chosen = {}
        for r in sorted(screen.done.values(), key=lambda r: r["setting"].get("K", 0)):
            s = r["setting"]
            if s["arch"] == "im" and all(s[k] == v for k, v in BASE.items()) and converged(r):
                chosen.setdefault(s["solver"], s)  # the smallest K at which this solver converged in A
        print(f"stage B solvers (converged in A): {', '.join(chosen) or 'none'}", flush=True)
        for form, dt in FORMS_DTS:
            m({"arch": "ex", "form": form, "dt": dt, "layers": BASE["layers"]})
            for s in chosen.values():
                m({**s, "form": form, "dt": dt})
    if "C" in stages:
        best = ranked(screen.done)[:3]
        print(f"stage C settings: {', '.join(r['key'] for r in best) or 'none'}", flush=True)
        for r in best:
            for layers in LAYER_OPTIONS:
                m({**ex_of(r["setting"]), "layers": layers})
                m({**r["setting"], "layers": layers})
    if "A" in stages:
        for solver in STAGE_A_LATE:
            m({"arch": "im", **BASE, **solver})
