"""Training: the one loop and its objectives. The verb `robustft.train(cfg)` is `robustft.training.loop.train`."""
