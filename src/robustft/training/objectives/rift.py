"""RIFT: Robust Informative Fine-Tuning (Dong et al., NeurIPS 2021).

    L = CE(z_clean, y) + beta * KL(p_clean || p_adv) + alpha * mean_c InfoNCE_c [+ options]

The adversary is the ASCC hull (`robustft.adversary.hull`, 10 Adam steps, entropy weight 15 / (300*128)).
InfoNCE_c, for each class c in the batch: student features S (pooled output of the model on the
adversarial embedding) and teacher features T (pooled output of the frozen pre-trained encoder on the
clean input, no gradient) go through that class's two trainable heads (hidden->512->ReLU->256, L2
normalised); each teacher feature must pick its own student among the students of class c (tau 0.2).

The release's warm-up scales the learning rate: 0.1 in epoch 0, 0.55 in epoch 1, then 1
(`WarmupMultiStepLR(optimizer, (50, 80), 0.1, 0.1, 2, 'linear')` stepped per epoch in rift_train.py; its
milestones 50 and 80 lie beyond the 20 epochs). `lr_factor(epoch)` hands these factors to the loop's
schedule (`robustft.training.optim`). Weight decay (`weight_decay()`): 0 on the encoder, 2e-4 on every other
parameter, biases and LayerNorms included (the classifier head and the InfoNCE heads).

Off in the release, options here: `adv_ce` (weight of CE on the adversarial logits), `conditional_mi=False`
(one head pair and negatives from the whole batch), `l2_pretrained` (weight of ||theta - theta_0||^2 to the
teacher's weights). Mixout is not implemented.

Presets: `rift-imdb` and `rift-snli` are the release's two recipes (`preset()`: beta, alpha, lr 2e-5,
batch 32 / 120, max length 300 / 80, 20 epochs, constant LR after the warm-up); `rift` takes the recipe of
its task (IMDB or SNLI) and has none for other tasks.
"""

from __future__ import annotations

import contextlib
import copy

import torch
import torch.nn.functional as F
from torch import nn

from robustft.adversary.candidates import DEFAULT_SLOTS
from robustft.adversary.embedding_delta import kl
from robustft.adversary.embeds import forward_embeds
from robustft.adversary.hull import HullSettings
from robustft.data.batching import model_inputs
from robustft.errors import ConfigError
from robustft.training.objectives.ascc import RELEASE_WARMUP, HullObjective

# The release's training recipes (rift_train.py): AdamW lr 2e-5, 20 epochs, the LR warm-up of lr_factor()
# and no other schedule (its MultiStep milestones 50 and 80 are never reached), weight decay by weight_decay(),
# no gradient clipping (max_grad_norm 0).
RELEASE_RECIPES = {
    "imdb": {
        "lr": 2e-5,
        "batch_size": 32,
        "max_length": 300,
        "epochs": 20,
        "warmup_ratio": 0.0,
        "lr_schedule": "constant",
        "max_grad_norm": 0.0,
        "method_args": {"beta": 10.0, "alpha": 0.1},
    },
    "snli": {
        "lr": 2e-5,
        "batch_size": 120,
        "max_length": 80,
        "epochs": 20,
        "warmup_ratio": 0.0,
        "lr_schedule": "constant",
        "max_grad_norm": 0.0,
        "method_args": {"beta": 5.0, "alpha": 0.7},
    },
}
HEAD_WEIGHT_DECAY = 2e-4  # the release: 2e-4 on every non-encoder parameter (biases included), 0 on the encoder


def projection_head(hidden: int, inner: int = 512, out: int = 256) -> nn.Module:
    return nn.Sequential(nn.Linear(hidden, inner), nn.ReLU(), nn.Linear(inner, out))


def pooled_features(output, attention_mask: torch.Tensor, kind: str) -> torch.Tensor:
    """The feature RIFT reads from an encoder output: the pooler output (falling back to [CLS] for
    encoders without a pooler), the [CLS] state, or the attention-masked mean of the last layer."""
    if kind == "pooler" and getattr(output, "pooler_output", None) is not None:
        return output.pooler_output
    hidden = output.last_hidden_state
    if kind == "mean":
        m = attention_mask.unsqueeze(-1).to(hidden.dtype)
        return (hidden * m).sum(1) / m.sum(1).clamp_min(1)
    return hidden[:, 0]


@contextlib.contextmanager
def tap(module: nn.Module):
    """Capture the output of `module` (the model's base encoder) during one forward call."""
    seen = {}
    handle = module.register_forward_hook(lambda mod, args, out: seen.__setitem__("out", out))
    try:
        yield seen
    finally:
        handle.remove()


def info_nce(students: torch.Tensor, teachers: torch.Tensor, tau: float) -> torch.Tensor:
    """Each teacher row must pick its own student (same index) among all the students given."""
    scores = F.normalize(teachers.float(), dim=-1) @ F.normalize(students.float(), dim=-1).T / tau
    return F.cross_entropy(scores, torch.arange(len(students), device=scores.device))


class RIFT(HullObjective):
    name = "rift"
    class_balanced_batches = True
    default_beta, default_alpha = 10.0, 0.1
    recipe: str | None = None  # the release recipe it presets on every task; None: the task's own, if any

    def __init__(
        self,
        beta: float | None = None,
        alpha: float | None = None,
        tau: float = 0.2,
        steps: int = 10,
        hull_lr: float = 1.0,
        hull_weight_decay: float = 2e-5,
        entropy_weight: float = 15.0,
        entropy_norm: float | None = 300 * 128,
        slots: int = DEFAULT_SLOTS,
        feature: str = "pooler",
        teacher: str = "pretrained",
        warmup: tuple[float, ...] | list = RELEASE_WARMUP,
        adv_ce: float = 0.0,
        conditional_mi: bool = True,
        l2_pretrained: float = 0.0,
        im_adversary_grad: str = "exact",
        hull_chunk: int | None = None,
    ):
        super().__init__(
            HullSettings(steps, hull_lr, hull_weight_decay, entropy_weight, entropy_norm, chunk=hull_chunk),
            slots,
            im_adversary_grad,
            warmup=warmup,
        )
        if feature not in ("pooler", "cls", "mean"):
            raise ConfigError(f"feature must be 'pooler', 'cls' or 'mean', not {feature!r}")
        if teacher not in ("pretrained", "copy"):
            raise ConfigError(f"teacher must be 'pretrained' (load the backbone again) or 'copy', not {teacher!r}")
        self.beta = self.default_beta if beta is None else beta
        self.alpha = self.default_alpha if alpha is None else alpha
        self.tau, self.feature, self.teacher_source = tau, feature, teacher
        self.encoder_prefix: str | None = None
        self.adv_ce, self.conditional_mi, self.l2_pretrained = adv_ce, conditional_mi, l2_pretrained
        self.teacher: nn.Module | None = None
        self.heads: nn.ModuleDict | None = None
        self.teacher_bytes = 0

    @classmethod
    def preset(cls, task):
        recipe = RELEASE_RECIPES.get(cls.recipe or task)
        if recipe is None:
            return {}
        return {**recipe, "method_args": {**recipe["method_args"], "im_adversary_grad": "exact"}}

    @classmethod
    def deviations(cls, cfg) -> list[str]:
        out = [
            "RIFT: the best epoch by clean dev accuracy (the release keeps the epoch of best ASCC-attack accuracy "
            "on the test set)",
            "RIFT: the backbone's own classifier head (the release: Linear-ReLU-Linear on the pooled output)",
        ]
        if cfg.group_by_length:
            out.append(
                "RIFT: class-balanced batches grouped by length, for speed (the release draws them at random), so "
                "the InfoNCE negatives are of similar length"
            )
        if cfg.max_grad_norm:
            out.append(f"RIFT: gradients clipped at norm {cfg.max_grad_norm:g} (the release does not clip)")
        return out

    def setup(self, model, ctx) -> None:
        super().setup(model, ctx)
        self.encoder_prefix = model.base_model_prefix
        self.teacher = self._load_teacher(model, ctx).to(ctx.device).eval()
        for p in self.teacher.parameters():
            p.requires_grad_(False)
        self.teacher_bytes = sum(p.numel() * p.element_size() for p in self.teacher.parameters())
        hidden = model.config.hidden_size
        n_pairs = model.config.num_labels if self.conditional_mi else 1
        self.heads = nn.ModuleDict(
            {
                "student": nn.ModuleList(projection_head(hidden) for _ in range(n_pairs)),
                "teacher": nn.ModuleList(projection_head(hidden) for _ in range(n_pairs)),
            }
        ).to(ctx.device)

    def _load_teacher(self, model, ctx) -> nn.Module:
        """The frozen pre-trained encoder, loaded once. 'pretrained' reloads the plain backbone (so an IM
        student still learns from plain pre-trained features); 'copy' copies the student before training."""
        if self.teacher_source == "copy":
            return copy.deepcopy(model.base_model)
        from transformers import AutoModel

        from robustft import resources
        from robustft.models.factory import load_config, pretrained

        # an IM/EX folder loads as its plain encoder here: the teacher is the plain pre-trained network
        ref = resources.resolve_model(ctx.model_name)
        return pretrained(
            AutoModel, ref, "teacher model", ctx.model_name, config=load_config(ctx.model_name), use_safetensors=True
        )

    def modules(self):
        return {"rift_heads": self.heads} if self.heads is not None else {}

    def weight_decay(self, module_name, param_name, param, default) -> float:
        """0 on the encoder (the model's base model), HEAD_WEIGHT_DECAY on every other parameter."""
        if self.encoder_prefix is None:
            raise ConfigError("method 'rift' needs setup() before its optimizer is built")
        on_encoder = module_name == "model" and param_name.startswith(self.encoder_prefix + ".")
        return 0.0 if on_encoder else HEAD_WEIGHT_DECAY

    def mutual_information_loss(self, students, teachers, labels) -> torch.Tensor:
        if not self.conditional_mi:
            s, t = self.heads["student"][0](students), self.heads["teacher"][0](teachers)
            return info_nce(s, t, self.tau)
        losses = []
        for c in labels.unique().tolist():
            rows = labels == c
            s, t = self.heads["student"][c](students[rows]), self.heads["teacher"][c](teachers[rows])
            losses.append(info_nce(s, t, self.tau))
        return torch.stack(losses).mean()

    def loss(self, model, batch):
        if self.teacher is None:
            raise ConfigError("method 'rift' needs setup() (teacher, heads, candidates) before the first batch")
        labels, inputs = batch["labels"], model_inputs(batch)
        clean_logits = model(**inputs).logits
        adv_embeds = self.adversarial_embeds(model, batch)
        with tap(model.base_model) as seen:
            adv_logits = forward_embeds(model, batch, adv_embeds)
        students = pooled_features(seen["out"], batch["attention_mask"], self.feature)
        with torch.no_grad():
            teachers = pooled_features(self.teacher(**inputs), batch["attention_mask"], self.feature)

        ce = F.cross_entropy(clean_logits.float(), labels)
        robust = kl(clean_logits, adv_logits)
        mi = self.mutual_information_loss(students, teachers.detach(), labels)
        loss = ce + self.beta * robust + self.alpha * mi
        logs = {"ce": ce.item(), "kl": robust.item(), "infonce": mi.item()}
        if self.adv_ce:
            adv = F.cross_entropy(adv_logits.float(), labels)
            loss = loss + self.adv_ce * adv
            logs["adv_ce"] = adv.item()
        if self.l2_pretrained:
            pull = self.pull_to_pretrained(model)
            loss = loss + self.l2_pretrained * pull
            logs["l2_pretrained"] = pull.item()
        return loss, logs

    def pull_to_pretrained(self, model) -> torch.Tensor:
        reference = dict(self.teacher.named_parameters())
        terms = [
            (p - reference[n]).pow(2).sum()
            for n, p in model.base_model.named_parameters()
            if n in reference and reference[n].shape == p.shape
        ]
        if not terms:
            raise ConfigError("l2_pretrained: the student's encoder shares no parameter names with the teacher")
        return torch.stack(terms).sum()


class RiftImdb(RIFT):
    """The release's IMDB recipe (on any task): beta 10, alpha 0.1, batch 32, max length 300."""

    name = "rift-imdb"

    default_beta, default_alpha = 10.0, 0.1
    recipe = "imdb"


class RiftSnli(RIFT):
    """The release's SNLI recipe (on any task): beta 5, alpha 0.7, batch 120, max length 80."""

    name = "rift-snli"

    default_beta, default_alpha = 5.0, 0.7
    recipe = "snli"
