"""Run `robustft` under torchrun for tests/test_scale.py, with two test-only instruments set by environment:

- SCALE_CHECK_SYNC=FILE: at every checkpoint, every rank's digest of every trained module (the model and an
  objective's own modules) is gathered and written to FILE by rank 0, so a test sees whether the ranks stayed equal;
- SCALE_DIE=RANK:CALL: that rank exits abruptly (os._exit, as a killed process) at its CALL-th objective loss.
"""

import hashlib
import json
import os
import sys

import torch

from robustft import cli
from robustft.training import loop
from robustft.training.objectives import OBJECTIVES, build_objective


def digest(modules: dict) -> str:
    h = hashlib.sha256()
    for name, module in sorted(modules.items()):
        for key, value in sorted(module.state_dict().items()):
            h.update(f"{name}/{key}".encode())
            h.update(value.detach().float().cpu().numpy().tobytes())
    return h.hexdigest()


def check_sync(path: str) -> None:
    real = loop.checkpoint

    def checked(group, folder, modules, optimizer, scheduler, state, *rest):
        digests = group.gather(digest(modules))
        if group.world.main:
            seen = json.loads(open(path).read()) if os.path.exists(path) else []
            seen.append({"step": state["step"], "digests": digests})
            with open(path, "w") as f:
                json.dump(seen, f)
        real(group, folder, modules, optimizer, scheduler, state, *rest)

    loop.checkpoint = checked


def die_at(rank: int, call: int) -> None:
    build_objective("standard")  # fill the registry
    if int(os.environ.get("RANK", "0")) != rank:
        return
    calls = {"n": 0}
    for cls in set(OBJECTIVES.values()):
        real = cls.loss

        def dying(self, model, batch, _real=real):
            calls["n"] += 1
            if calls["n"] == call:
                sys.stdout.flush()
                os._exit(9)
            return _real(self, model, batch)

        cls.loss = dying


if __name__ == "__main__":
    torch.set_num_threads(1)
    if os.environ.get("SCALE_CHECK_SYNC"):
        check_sync(os.environ["SCALE_CHECK_SYNC"])
    if os.environ.get("SCALE_DIE"):
        die_at(*map(int, os.environ["SCALE_DIE"].split(":")))
    sys.exit(cli.main(sys.argv[1:]))
