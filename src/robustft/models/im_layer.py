"""The implicit-Euler step around one residual layer F of a Hugging Face encoder.

A converted layer keeps its class's parameters and state-dict keys: its class is swapped for a subclass
whose `forward` runs the step and calls the original `forward` as F. So plain checkpoints load into IM
models and back, and Hugging Face's per-layer hooks (output_hidden_states) still see the layer.

For input h and f = F (form "layer") or f(u) = F(u) - u (form "increment"):
    z_0 = h + dt*f(h)                              the explicit step (EX-BERT stops here)
    r(z) = (z - h - dt*f(z)) * token_mask           padding positions never enter the energy
    z_{k+1} = z_k - eta * d/dz 0.5*|r(z_k)|^2       per example, K times (solver "gd", the paper's)
The other solvers ("gd-backtracking": a per-example Armijo line search on the same energy; "anderson": a damped,
Anderson-accelerated fixed-point iteration) replace the last line; see ImSettings.
"""

from __future__ import annotations

import contextlib
import logging
import math
from dataclasses import dataclass, field

import torch
import torch.utils.checkpoint
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel

from robustft.errors import RobustftError
from robustft.models.im_settings import ImSettings

log = logging.getLogger("robustft.im")


class ImDivergence(RobustftError):
    """An implicit solve diverged and the policy is 'raise'."""


# The largest share of an IM model's solves (examples x IM layers) that may fall back to the explicit step before
# training or evaluation stops: past it the model labelled IM computes EX-BERT on a sizeable part of its inputs
# (eta 1e30 made every solve fall back). 5% sits far above the defaults (0-1 fallen-back solves of about 17,000 in
# each MiniLM ablation run, docs/im_bert.md) and below the eta 0.03 runs the ablation rejected for their fallbacks
# (1,155-1,348 of about 17,000: 7-8%); `allow_im_fallback` lets a run through, recording the share.
MAX_FALLBACK_SHARE = 0.05


class ImFallbackError(RobustftError):
    """More than MAX_FALLBACK_SHARE of the IM solves fell back to the explicit step (the model computes EX)."""


def fallback_share(layer_stats: dict[str, dict]) -> float | None:
    """The share of solves that fell back, over every IM layer of `im_stats(model)`; None when none was solved."""
    examples = sum(s["examples"] for s in layer_stats.values())
    return sum(s["diverged"] for s in layer_stats.values()) / examples if examples else None


def check_fallback_share(share: float | None, allowed: bool, where: str) -> None:
    """Raise ImFallbackError when `share` is above MAX_FALLBACK_SHARE and the user did not allow it."""
    if share is not None and share > MAX_FALLBACK_SHARE and not allowed:
        raise ImFallbackError(
            f"{where}: {share:.1%} of the IM solves fell back to the explicit step (more than "
            f"{MAX_FALLBACK_SHARE:.0%}), so this IM model computes EX-BERT on much of its input; lower im.eta or "
            f"im.K, or pass --allow_im_fallback to go on and record the share"
        )


@dataclass
class ImLayerStats:
    """Counters of one converted layer; the residuals are those of the latest forward."""

    layer: int
    forwards: int = 0
    examples: int = 0
    diverged: int = 0
    nonfinite: int = 0
    # mean over the batch's examples of |r(z_k)| / |z_k| for k = 0..K (last forward only)
    last_relative_residual: list[float] = field(default_factory=list)
    # grad "implicit"/"adaptive": mean over the batch of the adjoint's |v + J^T g_k - g_k| / |v| at each adjoint
    # iteration k = 0..adjoint_K-1 of the latest backward (how far the adjoint solve is from its fixed point)
    last_adjoint_residual: list[float] = field(default_factory=list)
    # grad "adaptive": the gradient the latest training forward chose ("implicit" or "unrolled")
    last_gradient: str | None = None

    def as_dict(self) -> dict:
        return {
            "forwards": self.forwards,
            "examples": self.examples,
            "diverged": self.diverged,
            "nonfinite": self.nonfinite,
            "last_relative_residual": list(self.last_relative_residual),
            "last_adjoint_residual": list(self.last_adjoint_residual),
            "last_gradient": self.last_gradient,
        }


class ImplicitStepMixin:
    """Mixed in front of an encoder layer class by `implicit_class`; see the module docstring."""

    im_settings: ImSettings
    im_stats: ImLayerStats

    def forward(self, hidden_states, *args, **kwargs):
        s = self.im_settings
        token_mask = _token_mask(args[0] if args else kwargs.get("attention_mask"), hidden_states)
        extras: list = []

        def layer(u):
            out = super(ImplicitStepMixin, self).forward(u, *args, **kwargs)
            if isinstance(out, tuple):  # MPNet, DeBERTa: (hidden, attentions...)
                extras[:] = [out[1:]]
                return out[0]
            return out

        if s.arch == "ex" or s.K == 0:
            # one call of F: dropout draws from the global generator exactly as the plain layer does, so
            # K = 0 (and EX with dt = 1, increment form) is the pre-trained model bit for bit, also in training
            out = _explicit_step(hidden_states, layer(hidden_states), s)
            return (out, *extras[0]) if extras else out
        with _same_dropout_each_call(self) as same_dropout:
            F = lambda u: same_dropout(layer, u)
            fh = F(hidden_states)
            z0 = _explicit_step(hidden_states, fh, s)
            if torch.is_inference_mode_enabled():
                # autograd (needed by the solver) is off in inference mode: solve on normal copies
                with torch.inference_mode(False):
                    h, z0c, mask = hidden_states.clone(), z0.clone(), token_mask.clone()
                    out = self._solve_and_check(h, z0c, F, mask, False).clone()
            else:
                needs_graph = torch.is_grad_enabled() and (
                    hidden_states.requires_grad or any(p.requires_grad for p in self.parameters())
                )
                out = self._solve_and_check(hidden_states, z0, F, token_mask, needs_graph)
        return (out, *extras[0]) if extras else out

    def _solve_and_check(self, h, z0, F, token_mask, needs_graph):
        """Solve, count, and replace the diverged examples by the explicit step, value and gradient."""
        out, energies, norms = self._solve(h, z0, F, token_mask, needs_graph)
        diverged = self._check(out, energies, norms)
        if not diverged.any():
            return out
        if needs_graph and self.im_settings.grad in ("unrolled", "jfb", "implicit", "adaptive"):
            # The graph of a blown-up row holds inf/NaN activations; zero times inf in its backward would put
            # NaN into every weight gradient of the batch. Solve again with those rows held at z_0 (finite),
            # so their backward is the explicit step's and the other rows' is unchanged.
            out, _, _ = self._solve(h, z0, F, token_mask, needs_graph, frozen=diverged)
        return torch.where(diverged.view(-1, 1, 1), z0, out)

    def _solve(self, h, z0, F, token_mask, needs_graph, frozen=None):
        """K solver iterations from z0; rows marked in `frozen` do not move. Returns (out, energies, norms)."""
        s = self.im_settings
        # "adaptive" records the unrolled graph and keeps it only where the solve did not converge (below)
        unrolled = needs_graph and s.grad in ("unrolled", "adaptive")
        keep = None if frozen is None else (~frozen).view(-1, 1, 1)

        # activation checkpointing of the unrolled anderson solve (gd's double backward does not recompute)
        layer_of = _recomputed(F) if unrolled and s.recompute and s.solver == "anderson" else F

        def residual(z):
            Fz = layer_of(z)
            fz = Fz if s.form == "layer" else Fz - z
            # the energy in at least fp32, also when the layer runs in bf16
            dtype = torch.promote_types(z.dtype, torch.float32)
            return (z.to(dtype) - h.to(dtype) - s.dt * fz.to(dtype)) * token_mask.to(dtype), fz

        energies, norms = [], []
        # double backward needs attention kernels with a differentiable backward: the math SDPA one
        kernels = sdpa_kernel([SDPBackend.MATH]) if unrolled and s.solver != "anderson" else contextlib.nullcontext()
        with torch.enable_grad(), kernels:
            iterate = _anderson if s.solver == "anderson" else _descend
            z_final = iterate(s, residual, z0, token_mask, keep, unrolled, energies, norms)
            mode, r = (s.grad if needs_graph else None), None
            if mode in ("implicit", "adaptive"):
                # G(z_K) = h + dt*f(z_K) at the detached solution, with its graph: the implicit gradient's one
                # evaluation (and the final residual)
                z_star = z_final.detach().requires_grad_(True)
                r, fz = residual(z_star)
                if mode == "adaptive":
                    mode = "implicit" if _converged(r, z_star, token_mask, keep, s.converged_tol) else "unrolled"
                    self.im_stats.last_gradient = mode
            if mode == "implicit":
                out = _implicit(s, h, z_star, fz, z0, token_mask, keep, self.im_stats)
            elif mode == "jfb":
                # value z_K, gradient of one fixed-point step h + dt*f(z_K) at the detached solution
                r, fz = residual(z_final)
                step = h + s.dt * fz
                out = z_final + (step - step.detach())
            else:
                if r is None:
                    with torch.no_grad():
                        r, _ = residual(z_final)
                # "explicit": value z_K, gradient of the explicit step (straight-through)
                out = z_final + (z0 - z0.detach()) if mode == "explicit" else z_final
        final_energy = 0.5 * r.detach().pow(2).sum(dim=(1, 2))
        energies.append(final_energy)
        norms.append(_masked_norm(z_final.detach(), token_mask))
        return out, energies, norms

    def _check(self, out, energies, norms) -> torch.Tensor:
        """Count the solve and apply the divergence policy; returns the rows whose energy rose or blew up."""
        s, stats = self.im_settings, self.im_stats
        first, last = energies[0], energies[-1]
        nonfinite = ~torch.isfinite(last) | ~torch.isfinite(out.detach().float()).flatten(1).all(dim=1)
        diverged = nonfinite | (last > first * (1 + s.tol))
        stats.forwards += 1
        stats.examples += out.shape[0]
        stats.last_relative_residual = [
            float((torch.sqrt(2 * e) / n.clamp_min(1e-12)).nan_to_num(nan=math.inf).mean())
            for e, n in zip(energies, norms, strict=True)
        ]
        n_div = int(diverged.sum())
        if n_div == 0:
            return diverged
        n_nonfinite = int(nonfinite.sum())
        if s.on_divergence == "raise":
            raise ImDivergence(
                f"IM solve diverged at layer {stats.layer} for {n_div} of {out.shape[0]} examples "
                f"({n_nonfinite} non-finite; energy {first.max().item():.4g} -> {last.max().item():.4g}): "
                f"lower im.eta or im.K, or use on_divergence='fallback'"
            )
        stats.diverged += n_div
        stats.nonfinite += n_nonfinite
        log.debug(
            "IM layer %d: %d diverged solves so far (%d non-finite) of %d examples",
            stats.layer,
            stats.diverged,
            stats.nonfinite,
            stats.examples,
        )
        if _is_power_of_ten(stats.diverged) or n_div >= out.shape[0]:
            log.warning(
                "IM layer %d: %d diverged solves so far (%d non-finite) of %d examples; fell back to the explicit step",
                stats.layer,
                stats.diverged,
                stats.nonfinite,
                stats.examples,
            )
        return diverged


# Armijo's sufficient-decrease constant of the backtracking line search (the usual textbook value; ours, not the
# paper's, which uses a fixed step).
ARMIJO_C = 1e-4
# Tikhonov term of Anderson's least-squares mixing, relative to the mean squared residual of its history.
ANDERSON_RIDGE = 1e-6


def _energy(r):
    return 0.5 * r.pow(2).sum(dim=(1, 2))


def _descend(s: ImSettings, residual, z0, token_mask, keep, unrolled, energies, norms):
    """K gradient steps on 0.5*|r(z)|^2, with the fixed step eta ("gd") or a per-example Armijo backtracking
    line search ("gd-backtracking"). Under `unrolled` the graph runs through every step (double backward); the
    step sizes the line search picked are constants of that graph (a piecewise-smooth map: its derivative is
    exact wherever the choice does not switch)."""
    z = z0 if unrolled else z0.detach().requires_grad_(True)
    last_size = None
    for _ in range(s.K):
        r, _ = residual(z)
        energy = _energy(r)
        (grad,) = torch.autograd.grad(energy.sum(), z, create_graph=unrolled)
        energies.append(energy.detach())
        norms.append(_masked_norm(z.detach(), token_mask))
        if s.solver == "gd-backtracking":
            last_size, size = _armijo_step(s, residual, z.detach(), grad.detach(), energy.detach(), last_size)
            step = size.view(-1, 1, 1).to(z.dtype) * grad.to(z.dtype)
        else:
            step = s.eta * grad.to(z.dtype)
        z = z - (step if keep is None else step * keep.to(step.dtype))
        if not unrolled:
            z = z.detach().requires_grad_(True)
    return z if unrolled else z.detach()


@torch.no_grad()
def _armijo_step(s: ImSettings, residual, z, grad, energy, last_size):
    """Per example, the first of a, a/2, ... (at most `halvings` halvings) with E(z - a*g) <= E(z) - c*a*|g|^2,
    where a starts at eta and then at twice the row's previous step (capped at eta), so a row whose good step is
    far below eta gets there over a few iterations. A row where no trial qualifies takes no step (its energy
    never rises). Returns (the last trial of each row, the step taken)."""
    grad_sq = grad.float().pow(2).sum(dim=(1, 2))
    trial = torch.full_like(energy, s.eta) if last_size is None else (2 * last_size).clamp_max(s.eta)
    size = torch.zeros_like(energy)
    found = torch.zeros_like(energy, dtype=torch.bool)
    for _ in range(s.halvings + 1):
        r, _ = residual(z - trial.view(-1, 1, 1).to(z.dtype) * grad.to(z.dtype))
        e = _energy(r)
        ok = ~found & torch.isfinite(e) & (e <= energy - ARMIJO_C * trial * grad_sq)
        size = torch.where(ok, trial, size)
        found |= ok
        if bool(found.all()):
            break
        trial = torch.where(found, trial, trial / 2)
    return trial, size


def _anderson(s: ImSettings, residual, z0, token_mask, keep, unrolled, energies, norms):
    """K iterations of z <- (1-beta) z + beta G(z), G(z) = h + dt f(z) = z - r(z), with Anderson acceleration:
    the next iterate mixes the last `memory` ones with the weights (summing to 1) that minimise the norm of the
    mixed residual, per example, over real tokens only. Needs only forwards of F: under `unrolled` the graph
    runs through the forwards and the small least-squares solves (no double backward); otherwise no graph."""
    beta = s.damping
    work = torch.promote_types(z0.dtype, torch.float32)
    grad_ctx = contextlib.nullcontext() if unrolled else torch.no_grad()
    with grad_ctx:
        z = z0 if unrolled else z0.detach()
        past_z, past_g = [], []  # iterates and their G-steps G(z) - z = -r(z), real tokens only
        for _ in range(s.K):
            r, _ = residual(z)
            energies.append(_energy(r).detach())
            norms.append(_masked_norm(z.detach(), token_mask))
            past_z.append(z.to(work))
            past_g.append(-r)
            past_z, past_g = past_z[-s.memory :], past_g[-s.memory :]
            weights = _mixing_weights(past_g)  # (batch, n)
            weights = weights.to(work)
            mix_z = sum(w.view(-1, 1, 1) * x for w, x in zip(weights.unbind(1), past_z, strict=True))
            mix_g = sum(w.view(-1, 1, 1) * g for w, g in zip(weights.unbind(1), past_g, strict=True))
            # (1-beta) z + beta G(z) = z + beta (G(z) - z), mixed; padding positions keep their value
            new = (mix_z + beta * mix_g) * token_mask.to(work) + z.to(work) * (1 - token_mask.to(work))
            new = new.to(z.dtype)
            z = new if keep is None else torch.where(keep, new, z)
    return z


def _converged(r, z, token_mask, keep, tol: float) -> bool:
    """Whether the final relative residual |r(z_K)| / |z_K|, averaged over the (unfrozen) rows as im_stats reports
    it, is at most `tol`."""
    relative = torch.sqrt(2 * _energy(r.detach())) / _masked_norm(z.detach(), token_mask).clamp_min(1e-12)
    if keep is not None:
        relative = relative[keep.view(-1)]
    return bool(relative.mean() <= tol)


def _implicit(s: ImSettings, h, z_star, fz, z0, token_mask, keep, stats: ImLayerStats):
    """The solution z_K = z_star with the implicit-function gradient: the backward receives v = dL/dz, solves the
    adjoint fixed point g = v + J^T g (J = dG/dz at z_K, G(z) = h + dt f(z), fz = f(z_star) with its graph) by
    `adjoint_K` damped Anderson iterations from g = v (0 iterations is jfb), and passes g back through that one
    evaluation of G to the weights and h. Each iteration is one vector-Jacobian product through its graph (the
    input's gradient only). Padding positions keep the explicit step's value and gradient, as in the solve."""
    step = h + s.dt * fz.to(h.dtype)
    real = token_mask.to(step.dtype)
    if keep is not None:
        real = real * keep.to(real.dtype)

    def jacobian_t(g):
        (out,) = torch.autograd.grad(step, z_star, g, retain_graph=True)
        return out * real

    solved = _AdjointSolve.apply(step, jacobian_t, real, s, stats)
    return z_star.detach() + (solved - solved.detach()) * real + (z0 - z0.detach()) * (1 - real)


class _AdjointSolve(torch.autograd.Function):
    """Identity forward; the backward turns v into the solution g of the adjoint fixed point g = v + J^T g."""

    @staticmethod
    def forward(ctx, step, jacobian_t, real, s, stats):
        ctx.jacobian_t, ctx.real, ctx.s, ctx.stats = jacobian_t, real, s, stats
        return step.detach().clone()

    @staticmethod
    def backward(ctx, v):
        return _adjoint_anderson(ctx.s, ctx.jacobian_t, v * ctx.real, ctx.stats), None, None, None, None


def _adjoint_anderson(s: ImSettings, jacobian_t, v, stats: ImLayerStats):
    """`adjoint_K` iterations of g <- g + beta (v + J^T g - g) with Anderson mixing over the last `memory`
    iterates (the forward's solver, on the linear adjoint equation), from g = v."""
    beta = s.damping
    v_norm = v.flatten(1).norm(dim=1).clamp_min(1e-30)
    g, past_g, past_r, residuals = v, [], [], []
    for _ in range(s.adjoint_steps):
        r = v + jacobian_t(g) - g
        residuals.append(float((r.flatten(1).norm(dim=1) / v_norm).mean()))
        past_g, past_r = [*past_g, g][-s.memory :], [*past_r, r][-s.memory :]
        weights = _mixing_weights(past_r).to(g.dtype)
        g = sum(w.view(-1, 1, 1) * (x + beta * d) for w, x, d in zip(weights.unbind(1), past_g, past_r, strict=True))
    stats.last_adjoint_residual = residuals
    return g


def _mixing_weights(past_g):
    """(batch, n) weights summing to 1 that minimise |sum_i w_i g_i| per example (ridge-regularised)."""
    n = len(past_g)
    if n == 1:
        return torch.ones(past_g[0].shape[0], 1, dtype=torch.float64, device=past_g[0].device)
    flat = torch.stack([g.flatten(1) for g in past_g], dim=1).to(torch.float64)  # (batch, n, d)
    gram = flat @ flat.transpose(1, 2)
    scale = gram.diagonal(dim1=1, dim2=2).mean(dim=1).clamp_min(1e-30)
    eye = torch.eye(n, dtype=gram.dtype, device=gram.device)
    gram = gram + ANDERSON_RIDGE * scale.view(-1, 1, 1) * eye
    y = torch.linalg.solve(gram, torch.ones(gram.shape[0], n, 1, dtype=gram.dtype, device=gram.device))[..., 0]
    weights = y / y.sum(dim=1, keepdim=True)
    # a singular history (e.g. a solved row with zero residuals) gives no usable weights: take the latest iterate
    latest = torch.zeros_like(weights)
    latest[:, -1] = 1
    return torch.where(torch.isfinite(weights).all(dim=1, keepdim=True), weights, latest)


def _recomputed(F):
    """F that keeps only its input for the backward and runs again there (activation checkpointing)."""
    return lambda u: torch.utils.checkpoint.checkpoint(F, u, use_reentrant=False)


def _explicit_step(h, fh, s: ImSettings):
    if s.form == "layer":
        return h + s.dt * fh
    # increment form: with dt = 1 the explicit step is the pre-trained layer itself, bit for bit
    return fh if s.dt == 1.0 else h + s.dt * (fh - h)


def _token_mask(attention_mask, hidden) -> torch.Tensor:
    """(batch, seq, 1) float mask of real tokens, read from the mask the encoder passes to its layers.

    Layers receive a 4-d mask (batch, 1, query, key): boolean (True = attend), additive float (0 or a
    large negative number) or None when nothing is padded. A key is a real token if any query attends it.
    """
    batch, length = hidden.shape[:2]
    if attention_mask is None:
        return torch.ones(batch, length, 1, device=hidden.device)
    m = attention_mask
    if m.dtype == torch.bool:
        allowed = m
    elif m.is_floating_point():
        allowed = m > torch.finfo(m.dtype).min / 2
    else:
        allowed = m != 0
    if allowed.dim() == 4:
        allowed = allowed.any(dim=2)[:, 0] if allowed.shape[2] > 1 else allowed[:, 0, 0]
    elif allowed.dim() == 3:
        allowed = allowed.any(dim=1)
    allowed = allowed[:, -length:]
    return allowed.to(torch.float32).unsqueeze(-1).expand(batch, length, 1)


def _masked_norm(z, token_mask):
    return (z * token_mask.to(z.dtype)).pow(2).sum(dim=(1, 2)).sqrt()


def _is_power_of_ten(n: int) -> bool:
    return n > 0 and math.log10(n).is_integer()


@contextlib.contextmanager
def _same_dropout_each_call(module: nn.Module):
    """In training, every call of F within one step draws the same dropout masks, so the energy the
    solver descends is one function of z (fresh masks each call would make it a moving target)."""
    if not module.training or not any(isinstance(m, nn.Dropout) and m.p > 0 for m in module.modules()):
        yield lambda fn, u: fn(u)
        return
    seed = int(torch.randint(0, 2**62, (1,)).item())
    devices = [torch.cuda.current_device()] if torch.cuda.is_available() and torch.cuda.is_initialized() else []

    def call(fn, u):
        with torch.random.fork_rng(devices=devices):
            torch.manual_seed(seed)
            return fn(u)

    yield call


_CLASSES: dict[type, type] = {}


def implicit_class(base: type) -> type:
    """The subclass of an encoder-layer class that runs the implicit step (one per base class)."""
    if issubclass(base, ImplicitStepMixin):
        return base
    if base not in _CLASSES:
        _CLASSES[base] = type(f"Implicit{base.__name__}", (ImplicitStepMixin, base), {"_im_base_class": base})
    return _CLASSES[base]
