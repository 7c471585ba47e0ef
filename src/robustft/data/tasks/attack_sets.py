"""Evaluation-only attack sets: TextFooler's fixed 1,000-example samples and AdvGLUE dev."""

from __future__ import annotations

from robustft.data import readers as r
from robustft.data.tasks.registry import (
    NLI2,
    NLI3,
    PARAPHRASE,
    SENTIMENT,
    TOPIC,
    Task,
    index_map,
    names_map,
    one,
    register,
)

for tf_name, names, pair in [
    ("ag", TOPIC, False),
    ("imdb", SENTIMENT, False),
    ("mr", SENTIMENT, False),
    ("yelp", SENTIMENT, False),
    ("snli", NLI3, True),
    ("mnli", NLI3, True),
]:
    labels = {**index_map(names), **names_map(names)}
    register(
        Task(
            f"textfooler-{tf_name}",
            names,
            ("premise", "hypothesis") if pair else ("text",),
            {
                "test": one(
                    lambda p, labels=labels, pair=pair: r.read_label_space_text(p, labels, "\t" if pair else None),
                    f"textfooler/{tf_name}",
                ),
            },
            note="TextFooler's fixed 1,000-example attack set",
        )
    )

ADVGLUE = {
    "sst2": (SENTIMENT, ("sentence",)),
    "qqp": (PARAPHRASE, ("question1", "question2")),
    "mnli": (NLI3, ("premise", "hypothesis")),
    "mnli-mm": (NLI3, ("premise", "hypothesis")),
    "qnli": (NLI2, ("question", "sentence")),
    "rte": (NLI2, ("sentence1", "sentence2")),
}
for key, (names, fields) in ADVGLUE.items():
    register(
        Task(
            f"advglue-{key}",
            names,
            fields,
            {
                "dev": one(
                    lambda p, key=key, fields=fields, names=names: r.read_advglue(p, key, fields, index_map(names)),
                    "advglue/dev.json",
                ),
            },
            note="AdvGLUE dev: adversarial, evaluation only",
        )
    )
