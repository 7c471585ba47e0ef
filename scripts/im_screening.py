"""Screening of IM-BERT settings on pre-trained MiniLM, without training (issue 14, Part 1 item 1).

For each setting: the solver's final relative residual per converted layer (is the implicit step solved?), the
per-layer hidden-state distance and amplification under one counter-fitted word swap and under embedding noise,
against plain BERT and against the matched explicit control (EX with the same form, dt and layers), and the cost
of a forward as a ratio to plain. Sentences: the probe's seeded sample of SST-2 dev (no labels are read). fp32,
one torch thread. Settings are screened in stages, each chosen from the numbers of the ones before:

  A  solver x K at form increment, dt 1, layers 4-6 (the default's form, dt and layers; its two costliest
     settings run after C);
  B  form x dt (increment/layer x 0.25/0.5/1) for every solver that converged in A, at the smallest K it did;
  C  layers (1-6, 1-3) for the (at most three) settings of A and B that converge and damp most against EX.

Every finished setting is one line of the JSONL results file, written as it finishes; a restart skips them.

    nice -n 15 python scripts/im_screening.py                 # all stages (resumable)
    python scripts/im_screening.py --report                   # table + plot into docs/im_screening.md's folder
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

import torch

from robustft.data.tasks import load_examples
from robustft.models.factory import load_classifier
from robustft.models.im import convert, unconvert
from robustft.models.probe import pooled_hidden_states, swap_pairs

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "docs" / "im_screening" / "results.jsonl"
PAIRED = ROOT / "docs" / "im_screening" / "paired.jsonl"  # the picks again, with per-sentence distances
N_TEXTS, SEED, NOISE_STD = 100, 0, 0.05  # the probe's defaults: seeded SST-2 dev sample, noise std 0.05
CONVERGED = 0.05  # a solve counts as solved when every converted layer ends below this relative residual
BASE = {"form": "increment", "dt": 1.0, "layers": "4-6"}
# Stage A's solvers. eta: gd 0.05 is the largest fixed step the reviewer's note ran at dt 1 without mass
# divergence (0.01 is today's default, at its K 2); gd-backtracking starts at 0.2 and halves (4 at most).
# The costliest (gd K 20, gd-backtracking K 10) run last ("A+"), after B and C, so the CPU budget goes first to
# the settings that decide the picks.
STAGE_A = (
    [{"solver": "gd", "K": 2, "eta": 0.01}]
    + [{"solver": "anderson", "K": k} for k in (5, 10, 20)]
    + [{"solver": "gd", "K": k, "eta": 0.05} for k in (5, 10)]
    + [{"solver": "gd-backtracking", "K": 5, "eta": 0.2}]
)
STAGE_A_LATE = [{"solver": "gd-backtracking", "K": 10, "eta": 0.2}, {"solver": "gd", "K": 20, "eta": 0.05}]
FORMS_DTS = [(form, dt) for form in ("increment", "layer") for dt in (0.25, 0.5, 1.0)]
LAYER_OPTIONS = ("1-6", "1-3")


def key(setting: dict) -> str:
    if setting["arch"] == "plain":
        return "plain"
    parts = [setting["arch"], setting["form"], f"dt{setting['dt']}", f"L{setting['layers']}"]
    if setting["arch"] == "im":
        parts += [setting["solver"], f"K{setting['K']}"] + ([f"eta{setting['eta']}"] if "eta" in setting else [])
    return " ".join(parts)


def ex_of(setting: dict) -> dict:
    return {"arch": "ex", "form": setting["form"], "dt": setting["dt"], "layers": setting["layers"]}


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


def read(path: Path) -> list[dict]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:  # a line cut by a kill: measured again
            continue
    return out


def append(path: Path, record: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    cut = path.exists() and path.stat().st_size > 0 and not path.read_bytes().endswith(b"\n")
    with path.open("a") as f:
        f.write(("\n" if cut else "") + json.dumps(record) + "\n")  # a line cut by a kill stays on its own
        f.flush()
        os.fsync(f.fileno())


def converged(record: dict) -> bool:
    layers = record["residual"].values()
    return bool(layers) and all(r["end"] <= CONVERGED and r["diverged"] == 0 for r in layers)


def damping_vs_ex(record: dict, done: dict) -> float | None:
    """Mean over swap and noise of last-layer distance IM / matched EX (< 1: damps more than its control)."""
    ex = done.get(key(ex_of(record["setting"])))
    if ex is None:
        return None
    return sum(record[p]["mean"][-1] / ex[p]["mean"][-1] for p in ("swap", "noise")) / 2


def damps_more(record: dict, done: dict) -> bool:
    ex = done.get(key(ex_of(record["setting"])))
    return ex is not None and all(record[p]["mean"][-1] < ex[p]["mean"][-1] for p in ("swap", "noise"))


def ranked(done: dict) -> list[dict]:
    """IM settings that converge and damp more than their matched EX on both perturbations, best first, one per
    architecture (form, dt, layers): of the solver settings of one architecture only the best counts."""
    good = [r for r in done.values() if r["setting"]["arch"] == "im" and converged(r) and damps_more(r, done)]
    best: dict[str, dict] = {}
    for r in sorted(good, key=lambda r: (damping_vs_ex(r, done), r["cost_x_plain"])):
        best.setdefault(key(ex_of(r["setting"])), r)
    return list(best.values())


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


def fmt(x, digits=3):
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def table(done: dict) -> str:
    plain = done["plain"]
    rows = [
        "| setting | residual start -> end (max over layers) | diverged | swap: last-layer distance "
        "(x plain, x EX) | noise: last-layer distance (x plain, x EX) | converges and damps more than EX | "
        "cost x plain (CPU) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in done.values():
        s = r["setting"]
        ex = done.get(key(ex_of(s))) if s["arch"] == "im" else None
        res = r["residual"]
        start = max((v["start"] for v in res.values()), default=None)
        end = max((v["end"] for v in res.values()), default=None)
        cells = []
        for p in ("swap", "noise"):
            d = r[p]["mean"][-1]
            vs_ex = d / ex[p]["mean"][-1] if ex else None
            cells.append(f"{d:.3f} ({d / plain[p]['mean'][-1]:.3f}, {fmt(vs_ex)})")
        verdict = (
            "-"
            if s["arch"] != "im"
            else (
                "yes"
                if converged(r) and damps_more(r, done)
                else "converges, damps less"
                if converged(r)
                else "no solve"
            )
        )
        div = sum(v["diverged"] for v in res.values()) if res else "-"
        rows.append(
            f"| {r['key']} | {fmt(start)} -> {fmt(end)} | {div} | {cells[0]} | {cells[1]} | {verdict} | "
            f"{r['cost_x_plain']:.1f} |"
        )
    return "\n".join(rows)


def amplification_table(done: dict, records: list[dict]) -> str:
    """Per layer: the distance after the layer over the distance before it, for BERT, each record and its EX."""
    plain = done["plain"]
    layers = len(plain["swap"]["amplification"])
    rows = [
        "| perturbation | model | " + " | ".join(f"layer {i}" for i in range(1, layers + 1)) + " |",
        "|---|---|" + "---|" * layers,
    ]
    for p in ("swap", "noise"):
        seen = {"plain": plain}
        for r in records:
            seen.setdefault(key(ex_of(r["setting"])), done[key(ex_of(r["setting"]))])
            seen.setdefault(r["key"], r)
        for k, r in seen.items():
            rows.append(f"| {p} | {k} | " + " | ".join(f"{a:.3f}" for a in r[p]["amplification"]) + " |")
    return "\n".join(rows)


def plot(done: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, mid, right) = plt.subplots(1, 3, figsize=(16, 4.5))
    colors = {"gd": "C0", "gd-backtracking": "C1", "anderson": "C2"}
    for r in done.values():  # stage A: residual after the solve against K
        s = r["setting"]
        if s["arch"] == "im" and all(s[k] == v for k, v in BASE.items()):
            end = max(v["end"] for v in r["residual"].values())
            left.scatter(s["K"], end, color=colors[s["solver"]], label=s["solver"])
    handles = {h.get_label(): h for h in left.collections}
    left.legend(handles.values(), handles.keys())
    left.axhline(CONVERGED, color="grey", ls=":")
    left.set(
        xlabel="K",
        ylabel="final relative residual (max over layers 4-6)",
        yscale="log",
        title="A: increment, dt 1, layers 4-6",
    )
    for r in done.values():  # every IM setting: damping against its EX control and cost
        s = r["setting"]
        ratio = damping_vs_ex(r, done) if s["arch"] == "im" else None
        if ratio is not None:
            mid.scatter(r["cost_x_plain"], ratio, color=colors[s["solver"]], marker="o" if converged(r) else "x")
    mid.axhline(1.0, color="grey", ls=":")
    mid.set(
        xlabel="cost of a forward x plain (CPU time)",
        ylabel="last-layer distance IM / matched EX (mean of swap, noise)",
        xscale="log",
        title="damping beyond the explicit control (o: solved)",
    )
    plain = done["plain"]
    right.plot(plain["swap"]["mean"], "k-", marker="o", label="plain BERT")
    for i, r in enumerate(ranked(done)[:3]):
        ex = done[key(ex_of(r["setting"]))]
        right.plot(r["swap"]["mean"], "-", marker="s", color=f"C{i + 3}", label=r["key"])
        right.plot(ex["swap"]["mean"], "--", marker="^", color=f"C{i + 3}", label="its EX control")
    right.set(
        xlabel="layer (0 = embeddings)",
        ylabel="relative distance, 1 word swap",
        title="picked settings against EX and BERT",
    )
    right.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def paired_intervals(done: dict, picks: list[dict], resamples: int = 2000) -> list[dict]:
    """Per pick and perturbation: the mean over sentences of the last-layer distance of IM minus its matched EX,
    and the ratio of the means, each with a 95% percentile-bootstrap interval over sentences (paired, seeded)."""
    generator = torch.Generator().manual_seed(SEED)
    out = []
    for r in picks:
        ex = done[key(ex_of(r["setting"]))]
        for p in ("swap", "noise"):
            a, b = torch.tensor(r[p]["last"]), torch.tensor(ex[p]["last"])
            idx = torch.randint(len(a), (resamples, len(a)), generator=generator)
            diffs = (a[idx] - b[idx]).mean(dim=1)
            ratios = a[idx].mean(dim=1) / b[idx].mean(dim=1)
            lo, hi = torch.quantile(diffs, torch.tensor([0.025, 0.975])).tolist()
            rlo, rhi = torch.quantile(ratios, torch.tensor([0.025, 0.975])).tolist()
            out.append(
                {
                    "key": r["key"],
                    "perturbation": p,
                    "n": len(a),
                    "difference": float((a - b).mean()),
                    "difference_95": [lo, hi],
                    "ratio": float(a.mean() / b.mean()),
                    "ratio_95": [rlo, rhi],
                }
            )
    return out


def corrected_minutes(config_path: Path, done: dict) -> dict:
    """`robustft bench FILE --list`'s estimate per kind of job, and the same corrected by what it leaves out: each
    method's published preset (e.g. RIFT's 20 epochs; the estimate sees the loop's defaults) and the measured
    forward cost of IM settings (the estimate scales IM training by 1 + 0.6 K whatever the solver and layers, and
    IM evaluations and attacks not at all). A training step of an IM model costs (r + 2) / 3 plain steps with
    grad explicit or jfb (solver forwards r x plain, the backward of the explicit step) and r with unrolled
    (the backward runs through every iteration), r = the screening's CPU cost ratio of that setting's forward."""
    import copy

    from robustft.bench.estimate import job_seconds, train_seconds
    from robustft.bench.matrix import expand
    from robustft.config import BenchConfig, build_config, read_config_file
    from robustft.training.loop import apply_preset

    base = (str(config_path), {"name": config_path.stem, **read_config_file(str(config_path))})
    jobs = expand(build_config(BenchConfig, [], [], base=base))
    by_cell = {j.id: j for j in jobs if j.kind == "train"}
    listed = {"train": 0.0, "eval": 0.0, "attack": 0.0}
    corrected = dict(listed)
    unmeasured = set()
    for job in jobs:
        seconds = job_seconds(job)
        listed[job.kind] += seconds / 60
        train_cfg = by_cell[job.cell].config
        ratio = 1.0
        if train_cfg.arch == "im":
            setting = {
                "arch": "im",
                "form": "increment",
                "dt": 1.0,
                "layers": "4-6",
                "solver": "gd",
                "K": 2,
                **train_cfg.im,
            }
            record = next(
                (
                    r
                    for r in done.values()
                    if r["setting"]["arch"] == "im"
                    and all(r["setting"].get(k) == setting.get(k) for k in ("form", "dt", "layers", "solver", "K"))
                ),
                None,
            )
            if record is None:
                unmeasured.add(job.method)
            else:
                ratio = record["cost_x_plain"]
        if job.kind == "train":
            cfg = copy.deepcopy(job.config)
            apply_preset(cfg)
            seconds = train_seconds(cfg)
            if cfg.arch == "im":  # undo the estimate's 1 + 0.6 K, apply the measured cost
                grad = cfg.im.get("grad", "explicit")
                seconds *= (ratio if grad == "unrolled" else (ratio + 2) / 3) / (1.0 + 0.6 * int(cfg.im.get("K", 2)))
        else:
            seconds *= ratio
        corrected[job.kind] += seconds / 60
    return {
        "jobs": len(jobs),
        "listed_minutes": listed,
        "corrected_minutes": corrected,
        "unmeasured_im_methods": sorted(unmeasured),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stages", default="ABC", help="which stages to run, e.g. A or ABC")
    parser.add_argument("--n", type=int, default=N_TEXTS, help="SST-2 dev sentences (the probe's seeded sample)")
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--report", action="store_true", help="print the table and write the plot; no measuring")
    parser.add_argument(
        "--cost",
        type=Path,
        nargs="+",
        metavar="BENCH.yaml",
        help="the bench's own estimate and one corrected with presets and measured IM cost",
    )
    parser.add_argument(
        "--paired",
        action="store_true",
        help="measure the picks and their EX controls again with per-sentence distances (into "
        "paired.jsonl) and print paired bootstrap intervals of IM against EX",
    )
    args = parser.parse_args(argv)
    if args.paired:
        picks = ranked({r["key"]: r for r in read(args.results)})[:3]
        screen = Screen(args.results.parent / PAIRED.name, args.n)
        for r in picks:
            screen.measure(ex_of(r["setting"]))
            screen.measure(r["setting"])
        for row in paired_intervals(screen.done, [screen.done[r["key"]] for r in picks]):
            print(
                f"{row['key']:45s} {row['perturbation']:5s} n {row['n']}: IM - EX {row['difference']:+.4f} "
                f"[{row['difference_95'][0]:+.4f}, {row['difference_95'][1]:+.4f}]  IM / EX {row['ratio']:.3f} "
                f"[{row['ratio_95'][0]:.3f}, {row['ratio_95'][1]:.3f}]"
            )
        return 0
    if args.cost:
        done = {r["key"]: r for r in read(args.results)}
        for path in args.cost:
            c = corrected_minutes(path, done)
            fmt_kind = lambda m: ", ".join(f"{k} {v:.0f}" for k, v in m.items())  # noqa: E731
            listed, corrected = (sum(c[k].values()) / 60 for k in ("listed_minutes", "corrected_minutes"))
            print(
                f"{path}: {c['jobs']} jobs; --list: {listed:.1f} h ({fmt_kind(c['listed_minutes'])} min); "
                f"corrected: {corrected:.1f} h ({fmt_kind(c['corrected_minutes'])} min)"
                + (
                    f"; IM cost not measured for {', '.join(c['unmeasured_im_methods'])}"
                    if c["unmeasured_im_methods"]
                    else ""
                )
            )
        return 0
    if args.report:
        done = {r["key"]: r for r in read(args.results)}
        print(table(done))
        print(
            "\npicked (converge, damp more than EX; best first):",
            ", ".join(f"{r['key']} ({damping_vs_ex(r, done):.3f})" for r in ranked(done)[:3]) or "none",
        )
        print("\nper-layer amplification (distance after the layer / before it):\n")
        print(amplification_table(done, ranked(done)[:3]))
        print(f"CPU seconds spent: {sum(r['total_cpu_s'] for r in done.values()):.0f}")
        plot(done, args.results.parent / "screening.png")
        return 0
    run_stages(Screen(args.results, args.n), args.stages)
    return 0


if __name__ == "__main__":
    sys.exit(main())
