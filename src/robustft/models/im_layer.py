"""The implicit-Euler step around one residual layer F of a Hugging Face encoder.

A converted layer keeps its class's parameters and state-dict keys: its class is swapped for a subclass
whose `forward` runs the step and calls the original `forward` as F. So plain checkpoints load into IM
models and back, and Hugging Face's per-layer hooks (output_hidden_states) still see the layer.

For input h and f = F (form "layer") or f(u) = F(u) - u (form "increment"):
    z_0 = h + dt*f(h)                              the explicit step (EX-BERT stops here)
    r(z) = (z - h - dt*f(z)) * token_mask           padding positions never enter the energy
    z_{k+1} = z_k - eta * d/dz 0.5*|r(z_k)|^2       per example, K times
"""

from __future__ import annotations

import contextlib
import logging
import math
from dataclasses import dataclass, field

import torch
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel

from robustft.errors import RobustftError
from robustft.models.im_settings import ImSettings

log = logging.getLogger("robustft.im")


class ImDivergence(RobustftError):
    """An implicit solve diverged and the policy is 'raise'."""


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

    def as_dict(self) -> dict:
        return {"forwards": self.forwards, "examples": self.examples, "diverged": self.diverged,
                "nonfinite": self.nonfinite, "last_relative_residual": list(self.last_relative_residual)}


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
                    hidden_states.requires_grad or any(p.requires_grad for p in self.parameters()))
                out = self._solve_and_check(hidden_states, z0, F, token_mask, needs_graph)
        return (out, *extras[0]) if extras else out

    def _solve_and_check(self, h, z0, F, token_mask, needs_graph):
        """Solve, count, and replace the diverged examples by the explicit step, value and gradient."""
        out, energies, norms = self._solve(h, z0, F, token_mask, needs_graph)
        diverged = self._check(out, energies, norms)
        if not diverged.any():
            return out
        if needs_graph and self.im_settings.grad in ("unrolled", "jfb"):
            # The graph of a blown-up row holds inf/NaN activations; zero times inf in its backward would put
            # NaN into every weight gradient of the batch. Solve again with those rows held at z_0 (finite),
            # so their backward is the explicit step's and the other rows' is unchanged.
            out, _, _ = self._solve(h, z0, F, token_mask, needs_graph, frozen=diverged)
        return torch.where(diverged.view(-1, 1, 1), z0, out)

    def _solve(self, h, z0, F, token_mask, needs_graph, frozen=None):
        """K descent steps from z0; rows marked in `frozen` do not move. Returns (out, energies, norms)."""
        s = self.im_settings
        unrolled = needs_graph and s.grad == "unrolled"
        keep = None if frozen is None else (~frozen).view(-1, 1, 1)

        def residual(z):
            fz = F(z) if s.form == "layer" else F(z) - z
            # the energy in at least fp32, also when the layer runs in bf16
            dtype = torch.promote_types(z.dtype, torch.float32)
            return (z.to(dtype) - h.to(dtype) - s.dt * fz.to(dtype)) * token_mask.to(dtype), fz

        energies, norms = [], []
        # double backward needs attention kernels with a differentiable backward: the math SDPA one
        kernels = sdpa_kernel([SDPBackend.MATH]) if unrolled else contextlib.nullcontext()
        with torch.enable_grad(), kernels:
            z = z0 if unrolled else z0.detach().requires_grad_(True)
            for _ in range(s.K):
                r, _ = residual(z)
                energy = 0.5 * r.pow(2).sum(dim=(1, 2))
                (grad,) = torch.autograd.grad(energy.sum(), z, create_graph=unrolled)
                energies.append(energy.detach())
                norms.append(_masked_norm(z.detach(), token_mask))
                step = s.eta * grad.to(z.dtype)
                z = z - (step if keep is None else step * keep.to(step.dtype))
                if not unrolled:
                    z = z.detach().requires_grad_(True)
            z_final = z if unrolled else z.detach()
            if needs_graph and s.grad == "jfb":
                # value z_K, gradient of one fixed-point step h + dt*f(z_K) at the detached solution
                r, fz = residual(z_final)
                step = h + s.dt * fz
                out = z_final + (step - step.detach())
            else:
                with torch.no_grad():
                    r, _ = residual(z_final)
                # "explicit": value z_K, gradient of the explicit step (straight-through)
                out = z_final + (z0 - z0.detach()) if needs_graph and s.grad == "explicit" else z_final
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
            float((torch.sqrt(2 * e) / n.clamp_min(1e-12)).nan_to_num(nan=math.inf).mean()) for e, n in
            zip(energies, norms, strict=True)]
        n_div = int(diverged.sum())
        if n_div == 0:
            return diverged
        n_nonfinite = int(nonfinite.sum())
        if s.on_divergence == "raise":
            raise ImDivergence(
                f"IM solve diverged at layer {stats.layer} for {n_div} of {out.shape[0]} examples "
                f"({n_nonfinite} non-finite; energy {first.max().item():.4g} -> {last.max().item():.4g}): "
                f"lower im.eta or im.K, or use on_divergence='fallback'")
        stats.diverged += n_div
        stats.nonfinite += n_nonfinite
        log.debug("IM layer %d: %d diverged solves so far (%d non-finite) of %d examples", stats.layer,
                  stats.diverged, stats.nonfinite, stats.examples)
        if _is_power_of_ten(stats.diverged) or n_div >= out.shape[0]:
            log.warning("IM layer %d: %d diverged solves so far (%d non-finite) of %d examples; "
                        "fell back to the explicit step", stats.layer, stats.diverged, stats.nonfinite,
                        stats.examples)
        return diverged


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
