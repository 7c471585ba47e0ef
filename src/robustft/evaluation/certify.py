"""Certified accuracy of a model that predicts by an ensemble of noisy copies (`robustft eval --certify`): the
share of examples whose true label the ensemble's majority vote provably keeps under the defense's threat model,
from the vote count of the true label over `samples` fresh noisy copies (their own seed, so they are independent of
the prediction's copies).

p = a one-sided Clopper-Pearson lower bound (confidence 1 - alpha) of the true label's share of the copies' votes;
each defense turns p into its verdict and names what it covers (`robustft.defenses.safer`, `.ranmask`: the threat
models, Delta and why they hold).

The certificate is about the majority-vote classifier over copies, not the ensemble's default prediction
(TextDefender's mean of unit-normalised logits, which the clean accuracy and the attacks use). So the record keeps
that vote classifier's own prediction on each clean example (`vote_prediction`, the argmax of the certificate's
vote counts), and the summary its clean accuracy (`vote_accuracy`) beside the certified accuracy: a certified
figure is read against the accuracy of the classifier it certifies.

- SAFER (Ye, Gong and Liu 2020, Theorem 1): certified when p - Delta > 0.5, Delta = 1 - prod_j q_j. The release
  compares the empirical share minus a fixed Monte-Carlo error (0.01, 2,000 copies); the Clopper-Pearson bound
  replaces that, and q_j is the overlap of two uniform distributions (the release's q_j overstated it).
- RanMASK (Zeng et al. 2021/2023, Theorem 1, beta = 1): an example's radius is the largest d with
  p - Delta_d > 0.5 (-1: not even its clean prediction is certified).
"""

from __future__ import annotations

import torch
from scipy.stats import beta
from tqdm.auto import tqdm

from robustft.data.batching import encode
from robustft.defenses.ensemble import EnsembleClassifier
from robustft.defenses.registry import CERTIFIED, DEFENSES
from robustft.evaluation.stats import accuracy_with_interval
from robustft.models.predict import class_probs

DEFINITIONS = CERTIFIED  # defense name -> what its certificate guarantees
VOTE_ACCURACY = "clean accuracy of the certified classifier: the majority vote over the certificate's copies"


def lower_bound(count: int, n: int, alpha: float) -> float:
    """One-sided Clopper-Pearson lower confidence bound of a binomial share (0 when nothing was counted)."""
    return 0.0 if count == 0 else float(beta.ppf(alpha, count, n - count + 1))


def certify_records(
    model: EnsembleClassifier, tokenizer, examples, samples: int, alpha: float, **predict_kwargs
) -> list[dict]:
    """Each example's certificate: the true label's votes, its lower bound, the vote classifier's prediction and
    the defense's verdict."""
    if not examples:
        return []
    counting = model.with_settings(copies=samples, vote="votes", seed=model.settings.seed + 1)
    # one example at a time, so that the bar moves per example (a batch of examples was one step of minutes): an
    # example's noisy copies do not depend on its batch (ensemble.row_generator)
    bar = tqdm(examples, desc="certify", unit="example", disable=not predict_kwargs.pop("progress", False))
    shares = torch.cat([class_probs(counting, tokenizer, [example], **predict_kwargs) for example in bar])
    items = encode(tokenizer, examples, predict_kwargs.get("max_length", 128))
    out = []
    for row, (example, item) in enumerate(zip(examples, items, strict=True)):
        votes = round(float(shares[row, example.label]) * samples)
        p = lower_bound(votes, samples, alpha)
        vote_prediction = int(shares[row].argmax())
        record = {"votes": votes, "p_lower": round(p, 6), "vote_prediction": vote_prediction}
        record["vote_correct"] = vote_prediction == example.label
        out.append(record | counting.defense.certificate(p, item.input_ids))
    return out


def certified_summary(records: list[dict], setting: dict) -> dict:
    """metrics.json's `certified`: the settings, each certified accuracy with its n and 95% interval, and the clean
    accuracy of the vote classifier they certify."""
    certs = [r["certify"] for r in sorted(records, key=lambda r: r["index"])]
    out = {**setting, "definition": DEFINITIONS[setting["defense"]], "n": len(certs)}
    if all("vote_correct" in c for c in certs):  # certificates written before issue 63 lack it
        out |= {"vote_accuracy": accuracy_with_interval([c["vote_correct"] for c in certs])}
        out |= {"vote_accuracy_definition": VOTE_ACCURACY}
    return out | DEFENSES[setting["defense"]].certified_accuracy(certs, accuracy_with_interval)


def describe(summary: dict) -> list[str]:
    """Lines for the log: each certified accuracy with n and its 95% interval, then the vote classifier's."""
    head = f"certified accuracy ({summary['defense']}, {summary['samples']} copies, confidence {summary['confidence']})"
    if "accuracy" in summary:
        lines = [f"{head}: {_figure(summary['accuracy'])}"]
    else:
        lines = [f"{head}, {d} word(s) changed: {_figure(a)}" for d, a in summary["accuracy_by_changed_words"].items()]
    if "vote_accuracy" in summary:
        lines.append(f"{VOTE_ACCURACY}: {_figure(summary['vote_accuracy'])}")
    return lines


def _figure(acc: dict) -> str:
    low, high = acc["ci95"] or (None, None)
    return f"{acc['accuracy']:.4f} (95% interval [{low:.4f}, {high:.4f}], n={acc['n']})"
