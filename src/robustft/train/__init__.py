"""Training: the one loop and its objectives. `robustft.train(cfg)` runs `robustft.train.loop.train`."""

from robustft.verbs import callable_package

callable_package(__name__, "robustft.train.loop:train")
