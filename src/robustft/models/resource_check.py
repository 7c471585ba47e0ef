"""`robustft resources check`: every resource the project can use, found or not (data, lexical resources,
models, the shipped masked-LM head)."""

from __future__ import annotations

from dataclasses import dataclass

from robustft import resources
from robustft.data.tasks import TASKS
from robustft.errors import RobustftError
from robustft.models.mlm import HEAD_FILE, verify_head_file


@dataclass
class ResourceStatus:
    name: str
    found: bool
    where: str


def check_all() -> list[ResourceStatus]:
    """Every resource the project can use, found or not, for `robustft resources check`."""
    out: list[ResourceStatus] = []

    def probe(name, fn):
        try:
            out.append(ResourceStatus(name, True, str(fn())))
        except RobustftError as exc:  # missing, or present but damaged (checksum)
            out.append(ResourceStatus(name, False, str(exc)))

    probe("data root", resources.data_root)
    for task in TASKS.values():
        for split, rel in task.files.items():
            probe(f"task {task.name}/{split}", lambda rel=rel: resources.data_file(rel))
    probe("counter-fitted neighbours", lambda: resources.data_file(resources.COUNTERFITTED))
    probe("NLTK data (WordNet)", resources.nltk_data_dir)
    probe("stopwords (NLTK: PWWS, genetic)", lambda: f"{len(resources.stopwords())} words")
    probe("stopwords (TextFooler: TextFooler, BERT-Attack)", lambda: f"{len(resources.textfooler_stopwords())} words")
    probe("model minilm", lambda: resources.resolve_model("minilm"))

    def mlm_head():
        return f"{HEAD_FILE} (sha256 {verify_head_file()[:12]} verified)"

    probe("masked-LM head for minilm", mlm_head)
    return out
