"""robustft: fine-tune language models that stay right under adversarial word substitutions, and measure it.

The Python API mirrors the command line: build a config, call the verb.

    from robustft import TrainConfig, AttackConfig
    import robustft
    run_dir = robustft.train(TrainConfig(task="sst2", n_train=1000))
    summary = robustft.attack(AttackConfig(model=str(run_dir), recipe="textfooler", n=200))
"""

from robustft import evaluate, train  # noqa: E402  (callable packages: robustft.train(cfg), robustft.evaluate(cfg))
from robustft.config import AttackConfig, EvalConfig, ProbeConfig, TrainConfig  # noqa: E402
from robustft.version import __version__  # noqa: E402


def attack(cfg: AttackConfig, resume: bool = False, overwrite: bool = False) -> dict:
    """Attack a model (see `robustft.attacks.run.attack`); returns the run's metrics."""
    from robustft.attacks.run import attack as run

    return run(cfg, resume=resume, overwrite=overwrite)


def probe(cfg: ProbeConfig, resume: bool = False, overwrite: bool = False) -> dict:
    """Probe models layer by layer (see `robustft.evaluate.probe.probe`); returns the run's metrics."""
    from robustft.evaluate.probe import probe as run

    return run(cfg, resume=resume, overwrite=overwrite)


__all__ = [
    "train",
    "evaluate",
    "attack",
    "probe",
    "TrainConfig",
    "EvalConfig",
    "AttackConfig",
    "ProbeConfig",
    "__version__",
]
