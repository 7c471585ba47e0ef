"""Low-resource splits added to the benchmark tasks: the LM-BFF k-shot samples (kshot/<TASK>/16-<seed>/) and the
glue_subsets samples, as `kshot<seed>-train|dev` and `subset-train|dev`."""

from __future__ import annotations

from robustft.data.tasks import catalog  # noqa: F401  (the tasks these splits extend)
from robustft.data.tasks.registry import TASKS, subset, tsv

KSHOT = {  # registry name -> (folder, columns, dev file name)
    "sst2": ("SST-2", {"text_a": "sentence", "label": "label"}, "dev"),
    "snli": ("SNLI", {"text_a": "sentence1", "text_b": "sentence2", "label": "gold_label"}, "dev"),
    "mnli": ("MNLI", {"text_a": "sentence1", "text_b": "sentence2", "label": "gold_label"}, "dev_matched"),
    "qnli": ("QNLI", {"text_a": "question", "text_b": "sentence", "label": "label"}, "dev"),
    "rte": ("RTE", {"text_a": "sentence1", "text_b": "sentence2", "label": "label"}, "dev"),
    "qqp": ("QQP", {"text_a": "question1", "text_b": "question2", "label": "is_duplicate"}, "dev"),
}
KSHOT_SEEDS = (13, 21, 42, 87, 100)
# SNLI/MNLI rows list label1, then label2..label5 when five annotators voted, then gold_label: the header
# names only label1, so gold_label must be read from the end of the row, never by its header position.
SNLI_ANNOTATORS = ("label1", 4)
for task_name, (folder, cols, dev_name) in KSHOT.items():
    task = TASKS[task_name]
    for seed in KSHOT_SEEDS:
        for part, file in (("train", "train"), ("dev", dev_name)):
            task.splits[f"kshot{seed}-{part}"] = tsv(
                f"kshot/{folder}/16-{seed}/{file}.tsv", cols, task.label_names, SNLI_ANNOTATORS
            )
    for part in ("train", "dev"):
        task.splits[f"subset-{part}"] = subset(folder, task.label_names, part, task.is_pair)
    object.__setattr__(task, "files", {s: sp.files[0] for s, sp in task.splits.items()})
