"""What the screening measures: the sentences, the convergence threshold, the stages' settings, and each setting's
key (one JSONL line per key) and matched explicit control."""

from __future__ import annotations

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
