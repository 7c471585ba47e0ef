"""`RunResult`: what train, evaluate, attack and probe return: the run folder, its metrics.json as read under the
folder's lock (never re-read after another process may have rewritten it), and the headline figures as fractions
(`accuracy`: train's best dev accuracy, eval's accuracy, attack's accuracy under attack; `ci95`; `n`). Percent only
in printed text; metrics.json stays as written. `str()`, `os.fspath()` and `/` give the folder, `result["key"]` and
`.get` read the metrics, as train's returned path and evaluate's and attack's returned dict did."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class RunResult:
    path: Path
    verb: str
    metrics: dict
    accuracy: float | None = None
    ci95: tuple[float, float] | None = None
    n: int | None = None

    def __str__(self) -> str:
        return str(self.path)

    def __fspath__(self) -> str:
        return str(self.path)

    def __truediv__(self, name) -> Path:
        return self.path / name

    def __getitem__(self, key):
        return self.metrics[key]

    def __contains__(self, key) -> bool:
        return key in self.metrics

    def get(self, key, default=None):
        return self.metrics.get(key, default)
