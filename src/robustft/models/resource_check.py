"""`robustft resources check`: every resource the project can use, found or not (data, lexical resources,
models, the shipped masked-LM head), and the optional ones with the command that gets them (the MPNet backbone)."""

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
    optional: bool = False  # only some studies need it: absent, it is listed with how to get it, not as missing

    @property
    def label(self) -> str:
        return "found" if self.found else "optional" if self.optional else "MISSING"

    @property
    def missing(self) -> bool:
        """Absent and needed by every run (what makes `robustft resources check` fail)."""
        return not self.found and not self.optional


def check_all() -> list[ResourceStatus]:
    """Every resource the project can use, found or not, for `robustft resources check`."""
    out: list[ResourceStatus] = []

    def probe(name, fn, optional=False):
        try:
            out.append(ResourceStatus(name, True, str(fn()), optional))
        except RobustftError as exc:  # missing, or present but damaged (checksum)
            out.append(ResourceStatus(name, False, str(exc), optional))

    probe("data root", resources.data_root)
    for task in TASKS.values():
        for split, rel in task.files.items():
            probe(f"task {task.name}/{split}", lambda rel=rel: resources.data_file(rel))
    probe("counter-fitted neighbours", lambda: resources.data_file(resources.COUNTERFITTED))
    probe("NLTK data (WordNet)", resources.nltk_data_dir)
    probe("stopwords (NLTK: PWWS, genetic)", lambda: f"{len(resources.stopwords())} words")
    probe("stopwords (TextFooler: TextFooler, BERT-Attack)", lambda: f"{len(resources.textfooler_stopwords())} words")
    probe("model minilm", lambda: resources.resolve_model("minilm"))
    for alias in resources.FETCHED_MODELS:  # the MPNet backbone: `robustft fetch mpnet` (its error names it)
        probe(f"model {alias} (optional)", lambda alias=alias: resources.resolve_model(alias), optional=True)

    def mlm_head():
        return f"{HEAD_FILE} (sha256 {verify_head_file()[:12]} verified)"

    probe("masked-LM head for minilm", mlm_head)
    return out
