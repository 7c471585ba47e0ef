"""Certified accuracy of a model that predicts by an ensemble of noisy copies (`robustft eval --certify`): the
share of examples whose true label the ensemble provably keeps under a threat model, from the vote count of the true
label over `samples` fresh noisy copies (their own seed, so they are independent of the prediction's copies).

p = a one-sided Clopper-Pearson lower bound (confidence 1 - alpha) of the true label's share of the copies' votes.

- SAFER (Ye, Gong and Liu 2020, Theorem 1 as their release's evaluation.py applies it): the attacker may replace
  every word by any word of its perturbation set. With q_j the least overlap |P_j & P_u| / |P_j| of word j's set
  with the set of a member u, the vote shares move by at most Delta = 1 - prod_j q_j, and the true label is
  certified when p - Delta > 0.5. The release compares the empirical share minus a fixed Monte-Carlo error (0.01,
  2,000 copies); the Clopper-Pearson bound replaces that.
- RanMASK (Zeng et al. 2021/2023, Theorem 1): an input of h words of which k stay unmasked; an attacker who changes
  d words moves the vote shares by at most Delta_d = 1 - C(h - d, k) / C(h, k), the chance that a copy leaves some
  changed word unmasked (the paper's beta = 1, its guaranteed case). Certified at d when p - Delta_d > 0.5; an
  example's radius is the largest such d (-1: not even its clean prediction is certified).
"""

from __future__ import annotations

import math

import torch
from scipy.stats import beta

from robustft.adversary import smoothing
from robustft.adversary.ensemble import EnsembleClassifier
from robustft.data.batching import encode
from robustft.evaluation.stats import accuracy_with_interval
from robustft.models.predict import class_probs

RADII = (1, 2, 3, 4, 5, 10)  # RanMASK: certified accuracy reported against these numbers of changed words
DEFINITIONS = {
    "safer": "true label certified against replacing every word within its perturbation set (SAFER, Theorem 1)",
    "ranmask": "true label certified against d changed words (RanMASK, Theorem 1, beta = 1)",
}


def lower_bound(count: int, n: int, alpha: float) -> float:
    """One-sided Clopper-Pearson lower confidence bound of a binomial share (0 when nothing was counted)."""
    return 0.0 if count == 0 else float(beta.ppf(alpha, count, n - count + 1))


def masking_delta(h: int, kept: int, d: int) -> float:
    """RanMASK's Delta_d: the chance that a copy keeping `kept` of `h` words unmasked keeps one of d changed ones."""
    return 1.0 - math.comb(h - d, kept) / math.comb(h, kept) if d <= h else 1.0


def ranmask_radius(p: float, h: int, kept: int) -> int:
    """The largest d with p - Delta_d > 0.5 (-1 when p <= 0.5)."""
    radius = -1
    for d in range(h + 1):
        if p - masking_delta(h, kept, d) <= 0.5:
            break
        radius = d
    return radius


def example_words(model: EnsembleClassifier, ids: list[int]) -> tuple[int, float]:
    """(words that may move, SAFER's prod_j q_j) of one tokenised example."""
    row = torch.tensor([ids])
    words = smoothing.batch_words(row, torch.ones_like(row), model.table.continuation, model.tokenizer, model.task)
    overlap = model.table.overlap[row.clamp(0, len(model.table.overlap) - 1)]
    return int(words.count[0]), float(torch.where(words.whole, overlap, torch.ones_like(overlap)).prod())


def certify_records(
    model: EnsembleClassifier, tokenizer, examples, samples: int, alpha: float, **predict_kwargs
) -> list[dict]:
    """Each example's certificate: the true label's votes, its lower bound and the defense's verdict."""
    counting = model.with_settings(copies=samples, vote="votes", seed=model.settings.seed + 1)
    shares = class_probs(counting, tokenizer, examples, **predict_kwargs)
    items = encode(tokenizer, examples, predict_kwargs.get("max_length", 128))
    settings = model.settings
    out = []
    for row, (example, item) in enumerate(zip(examples, items, strict=True)):
        votes = round(float(shares[row, example.label]) * samples)
        p = lower_bound(votes, samples, alpha)
        h, overlap = example_words(model, item.input_ids)
        record = {"votes": votes, "p_lower": round(p, 6), "words": h}
        if settings.kind == "safer":
            record |= {"delta": round(1.0 - overlap, 6), "certified": p - (1.0 - overlap) > 0.5}
        else:
            masked = int(smoothing.masked_count(torch.tensor([h]), settings.rate, settings.min_keep)[0])
            record |= {"kept": h - masked, "radius": ranmask_radius(p, h, h - masked)}
        out.append(record)
    return out


def certified_summary(records: list[dict], setting: dict) -> dict:
    """metrics.json's `certified`: the settings and each certified accuracy with its n and 95% interval."""
    certs = [r["certify"] for r in sorted(records, key=lambda r: r["index"])]
    out = {**setting, "definition": DEFINITIONS[setting["defense"]], "n": len(certs)}
    if setting["defense"] == "safer":
        return out | {"accuracy": accuracy_with_interval([c["certified"] for c in certs])}
    radii = [c["radius"] for c in certs]
    by_words = {str(d): accuracy_with_interval([r >= d for r in radii]) for d in RADII}
    return out | {"accuracy_by_changed_words": by_words, "mean_radius": sum(max(r, 0) for r in radii) / len(radii)}


def describe(summary: dict) -> list[str]:
    """Lines for the log: each certified accuracy with n and its 95% interval."""
    head = f"certified accuracy ({summary['defense']}, {summary['samples']} copies, confidence {summary['confidence']})"
    if "accuracy" in summary:
        return [f"{head}: {_figure(summary['accuracy'])}"]
    return [f"{head}, {d} word(s) changed: {_figure(a)}" for d, a in summary["accuracy_by_changed_words"].items()]


def _figure(acc: dict) -> str:
    low, high = acc["ci95"] or (None, None)
    return f"{acc['accuracy']:.4f} (95% interval [{low:.4f}, {high:.4f}], n={acc['n']})"
