"""Paired bootstrap intervals over sentences of each pick's last-layer distance against its EX control."""

from __future__ import annotations

import torch

from studies.im_screening.settings import SEED, ex_of, key


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
