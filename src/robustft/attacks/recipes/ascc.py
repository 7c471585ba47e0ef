"""The white-box ASCC attack (Dong et al., ICLR 2021; RIFT's evaluation): the convex hull of each word's
counter-fitted neighbours, 10 Adam steps on the weights maximising the true label's cross-entropy minus
the entropy term, then argmax to words. Defaults are the release's hull settings (SPEC section 2)."""

from robustft.adversary.candidates import DEFAULT_SLOTS
from robustft.attacks.hull_attack import AsccAttack

CONFIG = {
    "steps": 10,  # release
    "lr": 1.0,  # release: Adam lr
    "weight_decay": 2e-5,  # release
    "entropy_weight": 15.0,  # release
    "entropy_norm": 300 * 128,  # release: summed entropy / (max length x batch); None: per-word mean
    "slots": DEFAULT_SLOTS,  # original + up to 9 counter-fitted neighbours
}


def build(victim, config: dict, mlm=None) -> AsccAttack:
    return AsccAttack(victim, config)
