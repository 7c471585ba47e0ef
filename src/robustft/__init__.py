"""robustft: fine-tune language models that stay right under adversarial word substitutions, and measure it.

The Python API mirrors the command line: build a config, call the verb.

    from robustft import TrainConfig, AttackConfig
    import robustft
    trained = robustft.train(TrainConfig(task="sst2", n_train=1000))
    attacked = robustft.attack(AttackConfig(model=str(trained.path), recipe="textfooler", n=200))
    attacked.accuracy, attacked.n, attacked.path  # every verb returns a RunResult: fractions, n, the run folder
    problems = robustft.recheck(results_dir)  # [] when a published results folder matches its runs
"""

import os
import sys

# One setup for the API and the CLI, before torch is imported: OpenMP threads that spin while waiting made bf16
# attacks up to 3x slower where the cores were shared (docs/performance.md); passive waiting changes no result.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from robustft.version import __version__  # noqa: E402


def version_only() -> bool:
    """`robustft --version`: answered without importing torch and the verbs (issue 67: it took seconds)."""
    return sys.argv[1:] == ["--version"] and os.path.basename(sys.argv[0]) in ("robustft", "robustft.exe")


if not version_only():
    from robustft.attacks.run import attack  # noqa: E402
    from robustft.bench.run import bench  # noqa: E402
    from robustft.config import AttackConfig, EvalConfig, ProbeConfig, ReportConfig, TrainConfig  # noqa: E402
    from robustft.evaluation.probe import probe  # noqa: E402
    from robustft.evaluation.run import evaluate  # noqa: E402
    from robustft.models import auto_registration  # noqa: E402,F401  (saved IM/EX models load through Auto classes)
    from robustft.report.run import report  # noqa: E402
    from robustft.results import recheck  # noqa: E402
    from robustft.runs.result import RunResult  # noqa: E402
    from robustft.training.loop import train  # noqa: E402

__all__ = [
    "train",
    "evaluate",
    "attack",
    "probe",
    "bench",
    "report",
    "recheck",
    "TrainConfig",
    "EvalConfig",
    "AttackConfig",
    "ProbeConfig",
    "ReportConfig",
    "RunResult",
    "__version__",
]
