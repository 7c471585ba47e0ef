"""Settings of the IM-BERT connection (and the EX-BERT control), as stored in `config.im`.

Layer numbers are 1-based everywhere a user sees them (CLI, config, this dataclass): "1-6" is every
layer of a 6-layer encoder; layer 1 is the one right after the embeddings. "upper-half" is the top
half of whatever encoder it meets (layers 4-6 of MiniLM, 7-12 of a 12-layer model).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from robustft.errors import ConfigError

ARCHS = ("im", "ex")
FORMS = ("increment", "layer")
GRAD_MODES = ("unrolled", "jfb", "explicit", "implicit", "adaptive")
# How the implicit equation z = h + dt*f(z) is solved (docs/im_bert.md, "Solvers"). "gd" is the paper's gradient
# descent at a fixed eta; the other two are ours, beyond the paper.
SOLVERS = ("gd", "gd-backtracking", "anderson")
DIVERGENCE_POLICIES = ("fallback", "raise")
UPPER_HALF = "upper-half"
# A converted model's config reports model_type "robustft_im_<base>" (e.g. robustft_im_bert), so a saved IM/EX
# folder never loads silently as the plain encoder: after `import robustft` transformers' Auto classes load it with
# its connections (auto_registration), without it they refuse the unknown type; an explicit class
# (BertForSequenceClassification) warns; robustft's load_classifier restores the connections.
MODEL_TYPE_PREFIX = "robustft_im_"


def base_model_type(model_type: str | None) -> str | None:
    """The encoder's own model_type behind a robustft IM/EX marker, or None for any other model_type."""
    if isinstance(model_type, str) and model_type.startswith(MODEL_TYPE_PREFIX):
        return model_type[len(MODEL_TYPE_PREFIX) :]
    return None


@dataclass(frozen=True)
class ImSettings:
    """How chosen residual layers become implicit-Euler steps (IM-BERT, Kim et al. 2024).

    arch: "im" solves z = h + dt*f(z) by K gradient steps on 0.5*|r|^2 from the explicit step;
          "ex" is the EX-BERT control: the explicit step only.
    layers: 1-based layer numbers; None means every layer; "upper-half" the top half of the encoder.
    form: "increment" (f(u) = F(u) - u: the explicit step with dt = 1 is the pre-trained layer) or
          "layer" (f = F: an outer residual connection h + dt*F(h) around the whole layer).
    grad: "unrolled" (the default) back-propagates through the K steps (exact: the gradient of what the
          forward computed; gd and gd-backtracking need a double backward); "jfb" gives the solution's value
          with the gradient of one fixed-point step h + dt*f(z_K) at the detached solution (Jacobian-free);
          "explicit" gives the solution's value with the explicit step's gradient (straight-through). Both
          cheap modes skip the backward through the solve, and are far from exact at the studies' settings
          (benchmarks/im_gradient_fidelity.py; docs/im_bert.md, "Which gradient trains").
          "implicit" (beyond the paper, as deep-equilibrium models train) gives the solution's value with the
          implicit-function gradient: the backward solves the adjoint fixed point g = v + J^T g at z_K by
          `adjoint_K` damped Anderson iterations (vector-Jacobian products through one extra evaluation of the
          layer), and is the unrolled gradient only as far as the forward solve converged. "adaptive" records
          the unrolled graph and, per layer and batch, keeps it where the solve's mean final relative residual
          is above `converged_tol`, and takes the implicit gradient where it is at most that.
    adjoint_K: the adjoint iterations of grad "implicit"/"adaptive"; None (the default) takes K.
    converged_tol: grad "adaptive"'s bound on the mean final relative residual |r(z_K)|/|z_K| under which a layer
          takes the implicit gradient (0.005: between MPNet's layers, at most 0.0025, where the implicit gradient
          has cosine 0.998 to the unrolled one, and MiniLM's layer 6, 0.023, where it has 0.94-0.97).
    recompute: with grad "unrolled" and solver "anderson", keep each iteration's input instead of the layer's
          activations and recompute the layer in the backward (activation checkpointing): the same gradient,
          bit for bit, with the solve's memory cut by about half (the Anderson mixing's tensors are still
          kept), for one more forward of each converted layer per iteration.
    on_divergence: "fallback" (use the explicit step for the diverged examples, count and log it) or
          "raise". A solve diverges when its final energy is not finite or exceeds the start's by more
          than the relative tolerance `tol`.
    solver: "gd" (the paper's: K steps of gradient descent on 0.5*|r|^2 with the fixed step eta);
          "gd-backtracking" (each step starts at eta, later at twice the previous step, and is halved, per
          example, up to `halvings` times until the energy falls by the Armijo condition; a row that finds
          no such step stays put);
          "anderson" (beyond the paper: the damped fixed-point iteration z <- (1-beta) z + beta (h + dt f(z))
          with Anderson acceleration over the last `memory` iterates; eta is not used).
    beta: damping of the anderson fixed-point step; None picks 1/(1+dt) in the increment form (which
          removes the -dt*z term: z <- (h + dt F(z)) / (1 + dt)) and 1 in the layer form.
    memory: iterates the Anderson mixing remembers (1 is the damped iteration itself).
    halvings: at most this many halvings of the step per gd-backtracking iteration (each iteration starts at
          twice the previous step, capped at eta).
    """

    # Defaults from the MiniLM/SST-2 ablation (docs/im_bert.md), chosen on SST-2 dev accuracy, divergence
    # counts and cost, never on AdvGLUE: the layer form lost ~10 dev points; eta 0.03 made many solves
    # diverge at the same dev accuracy; jfb did not fine-tune (dev 53%); explicit and unrolled tie on dev
    # and explicit is cheaper; layers 4-6 (the upper half) tie with all six on dev (78.8 vs 78.4) at half
    # the cost. K 2 was the only K the ablation ran. grad "unrolled" since issue 54: at the studies' setting (anderson,
    # K 10) the cheap modes' encoder-weight gradient has cosine 0.28 (explicit) and 0.41 (jfb) to the exact one on
    # MiniLM, 0.53 and 0.31 on MPNet, so they train another objective than the model computes (docs/im_bert.md,
    # "Which gradient trains"). Configs that set grad keep it; those relying on the old default now train unrolled.
    arch: str = "im"
    layers: tuple[int, ...] | str | None = UPPER_HALF
    K: int = 2
    eta: float = 0.01
    dt: float = 1.0
    form: str = "increment"
    grad: str = "unrolled"
    on_divergence: str = "fallback"
    tol: float = 0.01
    solver: str = "gd"
    beta: float | None = None
    memory: int = 5
    halvings: int = 4
    recompute: bool = False
    adjoint_K: int | None = None
    converged_tol: float = 0.005

    def __post_init__(self):
        _check_choice("arch", self.arch, ARCHS)
        _check_choice("form", self.form, FORMS)
        _check_choice("grad", self.grad, GRAD_MODES)
        _check_choice("on_divergence", self.on_divergence, DIVERGENCE_POLICIES)
        _check_choice("solver", self.solver, SOLVERS)
        if not isinstance(self.recompute, bool):
            raise ConfigError(f"im.recompute must be true or false, got {self.recompute!r}")
        if isinstance(self.layers, int) and not isinstance(self.layers, bool):  # `--im.layers 3` parses as 3
            object.__setattr__(self, "layers", (self.layers,))
        if isinstance(self.layers, str):
            spec = self.layers.strip().lower()
            object.__setattr__(self, "layers", UPPER_HALF if spec == UPPER_HALF else parse_layers(spec))
        elif self.layers is not None:
            if not isinstance(self.layers, list | tuple) or not all(_is_whole(n) for n in self.layers):
                raise ConfigError(f"im.layers: expected e.g. '1-6', '4,5,6', [4, 5, 6] or 'all', got {self.layers!r}")
            object.__setattr__(self, "layers", tuple(int(n) for n in self.layers))
        for name, (low, high, whole, above) in NUMBER_RANGES.items():
            value = getattr(self, name)
            if value is not None or name not in ("beta", "adjoint_K"):  # None: the default (see the fields)
                object.__setattr__(self, name, _checked_number(name, value, low, high, whole, above))

    @property
    def damping(self) -> float:
        """The anderson solver's beta: as set, or 1/(1+dt) in the increment form and 1 in the layer form."""
        if self.beta is not None:
            return self.beta
        return 1.0 / (1.0 + self.dt) if self.form == "increment" else 1.0

    @property
    def adjoint_steps(self) -> int:
        """Grad "implicit"'s adjoint iterations: adjoint_K as set, or K."""
        return self.K if self.adjoint_K is None else self.adjoint_K

    @classmethod
    def from_dict(cls, values: dict[str, Any] | None) -> ImSettings:
        values = dict(values or {})
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ConfigError(f"unknown IM setting(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["layers"] = self.layers if self.layers is None or isinstance(self.layers, str) else list(self.layers)
        return out

    def with_layers(self, num_layers: int) -> ImSettings:
        """The same settings with `layers` resolved and checked against the encoder's depth."""
        if self.layers is None:
            layers = tuple(range(1, num_layers + 1))
        elif self.layers == UPPER_HALF:
            layers = tuple(range(num_layers // 2 + 1, num_layers + 1))
        else:
            layers = self.layers
        bad = [n for n in layers if not 1 <= n <= num_layers]
        if bad:
            raise ConfigError(f"im.layers {bad} out of range: the encoder has layers 1-{num_layers} (1-based)")
        return replace(self, layers=tuple(sorted(set(layers))))


def parse_layers(spec: str) -> tuple[int, ...] | None:
    """'1-6', '1,3,5', '2-4,6', 'all' (None: every layer) or 'none' (no layer); 1-based."""
    spec = spec.strip().lower()
    if spec == "all":
        return None
    if spec in ("none", ""):
        return ()
    layers: list[int] = []
    for part in spec.split(","):
        part = part.strip()
        try:
            if "-" in part:
                lo, hi = (int(x) for x in part.split("-", 1))
                if lo > hi:
                    raise ValueError
                layers.extend(range(lo, hi + 1))
            else:
                layers.append(int(part))
        except ValueError:
            raise ConfigError(f"bad layer spec '{spec}': use e.g. '1-6', '1,3,5' or 'all' (1-based)") from None
    if any(n < 1 for n in layers):
        raise ConfigError(f"bad layer spec '{spec}': layers are 1-based")
    return tuple(sorted(set(layers)))


# The numeric settings' ranges, enforced wherever settings are made (a message naming the key instead of a
# traceback): (low, high or None, whole number, low excluded).
NUMBER_RANGES = {
    "K": (0, None, True, False),
    "eta": (0, None, False, True),
    "dt": (0, None, False, True),
    "tol": (0, None, False, False),
    "beta": (0, 1, False, True),
    "memory": (1, None, True, False),
    "halvings": (0, None, True, False),
    "adjoint_K": (0, None, True, False),
    "converged_tol": (0, None, False, False),
}
# What a user may ask for (config files, --im.*, bench cells), checked when a config is built; the API keeps the
# wider NUMBER_RANGES so that tests can force divergences. K and memory cap the work of one forward (the screening
# ran K <= 20); dt 1 is the pre-trained layer's own step, and beyond 100 the increment swamps the hidden state; tol
# above 1 would accept a solve whose energy more than doubled; 60 halvings reach float precision.
USER_LIMITS = {"K": 1000, "dt": 100, "tol": 1, "memory": 100, "halvings": 60, "adjoint_K": 1000}
# The largest gradient step (gd's eta; gd-backtracking's smallest, eta / 2**halvings): a step of 1 solves the
# residual at once where f is constant, a longer one overshoots. eta 1e30 made every solve fall back, so a model
# saved as IM computed EX-BERT.
MAX_STEP = 1.0


def check_user_settings(values: dict[str, Any] | None) -> ImSettings:
    """ImSettings from a user's values, within USER_LIMITS and MAX_STEP, or one ConfigError naming im.<key>. A user's
    `layers: none` (null) is no layer, as parse_layers reads 'none': every layer is 'all'."""
    if values and "layers" in values and values["layers"] is None:
        values = {**values, "layers": ()}
    settings = ImSettings.from_dict(values)
    for name, high in USER_LIMITS.items():
        if getattr(settings, name) is not None and getattr(settings, name) > high:
            raise ConfigError(f"im.{name} must be at most {high}, got {getattr(settings, name)!r}")
    if settings.solver == "gd" and settings.eta > MAX_STEP:
        raise ConfigError(
            f"im.eta must be at most {MAX_STEP:g} with solver gd (longer steps overshoot), got {settings.eta!r}"
        )
    smallest = settings.eta / 2**settings.halvings
    if settings.solver == "gd-backtracking" and smallest > MAX_STEP:
        raise ConfigError(
            f"im.eta / 2**im.halvings (the smallest step gd-backtracking tries) must be at most {MAX_STEP:g}, got "
            f"{settings.eta!r} / 2**{settings.halvings}"
        )
    return settings


def _is_whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) or isinstance(value, float) and value.is_integer()


def _checked_number(name: str, value, low, high, whole: bool, above: bool):
    """`value` (an int where `whole`) within its range, or a ConfigError naming im.<name> and the range."""
    number = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    inside = number and (low < value if above else low <= value) and (high is None or value <= high)
    if not inside or (whole and not _is_whole(value)):
        span = f"{'>' if above else '>='} {low}" if high is None else f"in {'(' if above else '['}{low}, {high}]"
        raise ConfigError(f"im.{name} must be {'a whole number' if whole else 'a number'} {span}, got {value!r}")
    return int(value) if whole else value


def _check_choice(name, value, choices):
    if value not in choices:
        raise ConfigError(f"im.{name} must be one of {', '.join(choices)}, got '{value}'")


def check_im(cfg) -> None:
    """`cfg.im` checked, and against `cfg.arch` where the config has one (a train config); `cfg` is not changed."""
    check_arch_reads(cfg, check_user_settings(cfg.im))


def pinned_gradient(cfg) -> dict:
    """`cfg.im` with the gradient mode written in when the user left it out, for a training run to record: the
    default changed from explicit to unrolled (issue 54), so a run folder trained before that under the same settings
    must not hash equal to one trained now (resuming or reusing it would mix two gradients). EX has no solve: its mode
    is recorded, unused, as it was when the default changed, so that EX folders of that time keep their hash."""
    if cfg.arch == "plain" or "grad" in cfg.im:
        return dict(cfg.im)
    return {**cfg.im, "grad": check_user_settings(cfg.im).grad}


# The settings only the implicit solve reads: an EX model (the explicit step alone) never uses them.
SOLVE_KEYS = ("K", "eta", "solver", "tol", "beta", "memory", "halvings", "on_divergence", "recompute", "adjoint_K")


def check_arch_reads(cfg, settings: ImSettings) -> None:
    """A train config's `im` fits its `arch` (issue 67): IM with 0 solve steps computes EX, IM or EX with no layer
    computes the plain encoder, each under the wrong label (refused); settings the arch never reads are warned
    about. A config without `arch` (probe: its variants) is not checked here."""
    arch = getattr(cfg, "arch", None)
    if arch == "im" and settings.K == 0:
        raise ConfigError("im.K: 0 solve steps with --arch im compute EX-BERT under an IM label; use K >= 1 or arch ex")
    if arch in ARCHS and settings.layers == ():
        raise ConfigError(
            f"im.layers: no layer with --arch {arch} computes the plain encoder under an {arch.upper()} label; name "
            "layers (e.g. 4-6) or use --arch plain"
        )
    unread = sorted(cfg.im) if arch == "plain" else sorted(set(cfg.im) & set(SOLVE_KEYS)) if arch == "ex" else []
    if unread:
        keys = ", ".join(f"im.{key}" for key in unread)
        warnings.warn(f"{keys}: --arch {arch} does not read {'it' if len(unread) == 1 else 'them'}", stacklevel=2)
