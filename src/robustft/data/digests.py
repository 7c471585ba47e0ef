"""sha256 of every input a run reads (data files, model files), so a run folder names its inputs and a resume
after an input changed is refused."""

from __future__ import annotations

from pathlib import Path

from robustft import resources, runs
from robustft.data import user_tasks
from robustft.data.tasks import get_task


def data_digests(task_name: str, splits: list[str]) -> dict[str, str]:
    """'data/<file>' -> sha256 for every file the splits read ('folder' for a folder, 'hub' for a hub split); a
    user's data: 'data:<path>' (or 'dataset:<name>/<config>') -> its sha256."""
    task = get_task(task_name)
    out = user_tasks.identity(task_name)
    for split in dict.fromkeys(splits):
        for rel in task.splits[split].files:
            if resources.has_data(rel):
                path = resources.data_root() / rel
                out[f"data/{rel}"] = resources.file_sha256(str(path)) if path.is_file() else "folder"
            else:
                out[f"data/{rel}"] = "hub"
    return out


def model_digests(reference: str) -> dict[str, str]:
    """'model/<file>' -> sha256 of the weights and configs of the model folder loaded for `reference` (a hub name:
    its name only). A training run folder means its best/ model, as models.factory.model_reference loads it, so a
    run folder and its best/ folder record the same inputs (not the run's own config and metrics)."""
    folder = Path(resources.resolve_model(runs.resolve(reference).model))
    if not folder.is_dir():
        return {"model": reference}
    files = sorted(p for p in folder.iterdir() if p.suffix in (".safetensors", ".json") and p.is_file())
    return {f"model/{p.name}": resources.file_sha256(str(p)) for p in files}
