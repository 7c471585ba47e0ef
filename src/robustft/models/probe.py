"""The stability probe: how far a perturbation of the input travels through the layers of a model.

For clean/perturbed input pairs (counter-fitted word swaps, or Gaussian noise on the word embeddings) it
measures, per layer, the relative distance of the mean-pooled hidden states |p - c| / |c| (pooled over
real tokens, so pairs of different token lengths compare), and for IM layers the solver's relative
residual |r|/|z| at the explicit start and after the K iterations. This is IM-BERT's stability argument
(implicit steps damp perturbations that explicit steps may amplify) measured on real models.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

import torch

from robustft import resources, runtime
from robustft.data.batching import tokenize_pad
from robustft.models.im import im_stats, reset_im_stats

WORD = re.compile(r"[A-Za-z]+")


@dataclass(frozen=True)
class ProbePair:
    clean: str
    perturbed: str


def swap_pairs(texts: list[str], swaps: int = 1, seed: int = 0, neighbors=None) -> list[ProbePair]:
    """Replace up to `swaps` words of each text by a random counter-fitted neighbour (texts with no
    replaceable word are skipped). Seeded: the same texts give the same pairs."""
    neighbors = neighbors if neighbors is not None else resources.counterfitted_neighbors()
    rng = random.Random(seed)
    pairs = []
    for text in texts:
        spans = [m for m in WORD.finditer(text) if neighbors.get(m.group().lower())]
        if not spans:
            continue
        chosen = sorted(rng.sample(spans, min(swaps, len(spans))), key=lambda m: m.start(), reverse=True)
        perturbed = text
        for m in chosen:
            perturbed = perturbed[: m.start()] + rng.choice(neighbors[m.group().lower()]) + perturbed[m.end() :]
        pairs.append(ProbePair(text, perturbed))
    return pairs


def noise_pairs(texts: list[str]) -> list[ProbePair]:
    """Pairs of identical texts: the perturbation is embedding noise added by `probe(noise_std=...)`."""
    return [ProbePair(t, t) for t in texts]


@torch.no_grad()
def pooled_hidden_states(
    model, tokenizer, texts, noise_std=0.0, seed=0, max_length=128, batch_size=32, precision="fp32"
):
    """(layers + 1, n, hidden) mean-pooled hidden states, and per batch and IM layer the solver's relative residual
    |r(z_k)|/|z_k| for k = 0..K (mean over the batch) and the number of its solves that diverged."""
    device = runtime.model_device(model)
    generator = torch.Generator().manual_seed(seed)
    pooled, residuals = [], []
    model.eval()
    for start in range(0, len(texts), batch_size):
        enc = runtime.to_device(
            tokenize_pad(tokenizer, texts[start : start + batch_size], max_length=max_length), device
        )
        inputs = dict(enc)
        if noise_std > 0:
            ids = inputs.pop("input_ids")
            embeds = model.get_input_embeddings()(ids)
            noise = torch.randn(embeds.shape, generator=generator).to(device, embeds.dtype)
            inputs["inputs_embeds"] = embeds + noise_std * noise
        reset_im_stats(model)
        with runtime.autocast(device, precision):
            out = model(**inputs, output_hidden_states=True)
        mask = enc["attention_mask"].unsqueeze(-1).float()
        pooled.append(torch.stack([(h.float() * mask).sum(1) / mask.sum(1) for h in out.hidden_states]))
        residuals.append(
            {
                k: {"residual": v["last_relative_residual"], "diverged": v["diverged"]}
                for k, v in im_stats(model).items()
            }
        )
    return torch.cat(pooled, dim=1), residuals


def probe(
    model,
    tokenizer,
    pairs: list[ProbePair],
    noise_std: float = 0.0,
    seed: int = 0,
    max_length: int = 128,
    batch_size: int = 32,
    precision: str = "fp32",
) -> dict:
    """Per layer (0 = embeddings): mean and std over pairs of the relative hidden-state distance; per IM
    layer: mean relative residual at the explicit start and after the solve, and the solves that diverged and
    fell back to the explicit step (clean inputs)."""
    clean, residuals = pooled_hidden_states(
        model, tokenizer, [p.clean for p in pairs], 0.0, seed, max_length, batch_size, precision
    )
    perturbed, _ = pooled_hidden_states(
        model, tokenizer, [p.perturbed for p in pairs], noise_std, seed, max_length, batch_size, precision
    )
    distance = (perturbed - clean).norm(dim=-1) / clean.norm(dim=-1).clamp_min(1e-12)
    solver = {}
    for layer in residuals[0] if residuals else {}:
        solves = [r[layer]["residual"] for r in residuals if r[layer]["residual"]]
        if not solves:  # an EX layer (or K = 0): no solve, no residual
            continue
        solver[layer] = {
            "start": sum(r[0] for r in solves) / len(solves),
            "end": sum(r[-1] for r in solves) / len(solves),
            "diverged": sum(r[layer]["diverged"] for r in residuals),
        }
    return {
        "n_pairs": len(pairs),
        "distance_mean": distance.mean(dim=1).tolist(),
        "distance_std": distance.std(dim=1).tolist() if len(pairs) > 1 else [0.0] * len(distance),
        "residual": solver,
    }


def plot(results: dict[str, dict], path, title: str = "") -> None:
    """Two panels: hidden-state distance per layer for every model, solver residual per IM layer."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    styles = ("-", "--", "-.", ":")
    markers = ("o", "s", "^", "D", "v", "x")
    for i, (name, result) in enumerate(results.items()):
        color = f"C{i % 10}"  # one colour per model in both panels; styles keep overlapping lines visible
        layers = list(range(len(result["distance_mean"])))
        left.plot(
            layers, result["distance_mean"], styles[i % 4], marker=markers[i % 6], color=color, label=name, alpha=0.85
        )
        residual = result["residual"]
        if residual:
            numbers = [int(k.split()[-1]) for k in residual]
            for key, style, fill, what in (
                ("start", "--", "none", "explicit start"),
                ("end", "-", "full", "after K steps"),
            ):
                values = [residual[k][key] for k in residual]
                right.plot(numbers, values, style, marker="o", color=color, fillstyle=fill, label=f"{name}: {what}")
    for axis in (left, right):
        axis.xaxis.set_major_locator(MaxNLocator(integer=True))
    left.set(
        xlabel="layer (0 = embeddings)",
        ylabel="|h(perturbed) - h(clean)| / |h(clean)|",
        title="perturbation through the layers",
    )
    left.legend()
    right.set(xlabel="layer", ylabel="relative residual |r| / |z|", title="implicit-Euler residual")
    if right.lines:
        right.legend(fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
