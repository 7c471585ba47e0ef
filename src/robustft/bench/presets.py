"""The bench presets: each a set of BenchConfig values. Every choice of a method's setting here comes from its
paper, its released code or our own dev-set/probe screening, never from an attack or AdvGLUE set."""

from __future__ import annotations

from robustft.training.objectives.textdefender import textdefender_training

# IM-BERT with the code's defaults (robustft.models.im_settings: K 2, eta 0.01, increment form, the upper half of
# the layers), which were chosen on SST-2 dev only (docs/im_bert.md says which data chose each).
IM = {"arch": "im"}

PRESETS: dict[str, dict] = {
    # The main job: small enough for 2 CPU cores in well under 15 minutes.
    "quick": {
        "name": "quick",
        "tasks": ["sst2"],
        "methods": {"bert": {}, "im-bert": IM, "rift": {"method": "rift"}},
        "seeds": [0],
        "sizes": [1000],
        "train": {"epochs": 3, "max_length": 64, "n_dev": 500},
        "evals": [{"task": "{task}", "split": "dev"}, {"advglue": True}],
        "attacks": [{"recipe": "textfooler", "split": "dev", "n": 200, "seed": 0}],
    },
    # AdvGLUE, scored officially: fine-tune on each GLUE task's shared subset, evaluate on its AdvGLUE dev split(s).
    "advglue": {
        "name": "advglue",
        "tasks": ["sst2", "qqp", "qnli", "rte", "mnli"],
        "methods": {"bert": {}, "im-bert": IM},
        "seeds": [0],
        "sizes": [None],
        "train": {"train_split": "subset-train", "epochs": 3, "max_length": 128},
        "evals": [{"task": "{task}", "split": "dev"}, {"advglue": True}],
        "attacks": [],
    },
    # Low-resource fine-tuning: 16 per class (the kshot samples) and growing subsets, several seeds.
    "lowresource": {
        "name": "lowresource",
        "tasks": ["sst2"],
        "methods": {"bert": {}, "im-bert": IM},
        "seeds": [0, 1, 2],
        "sizes": ["kshot13", "kshot21", "kshot42", "kshot87", "kshot100", 100, 500, 1000, "subset"],
        "train": {"epochs": 5, "max_length": 64},
        "evals": [{"task": "{task}", "split": "dev"}, {"advglue": True}],
        "attacks": [{"recipe": "textfooler", "split": "dev", "n": 200, "seed": 0}],
    },
    # The RIFT protocol (Dong et al. 2021): IMDB and SNLI; PWWS and the genetic attack with counter-fitted
    # neighbours as the release runs them (protocol "rift") on seeded test examples, and the white-box ASCC
    # attack. The paper's sizes are the defaults; shrink them with --train.epochs, --sizes, and the attacks' n.
    # Standard fine-tuning takes TextDefender's recipe, as the adversarial baselines do (so that they differ only in
    # their objective); its IMDB length of 256 on both tasks, which cuts no SNLI pair (the longest has 84 tokens).
    "rift": {
        "name": "rift",
        "tasks": ["imdb", "snli"],
        "methods": {
            "bert": textdefender_training("imdb"),
            "freelbpp": {"method": "freelbpp"},
            "ascc": {"method": "ascc"},
            "rift": {"method": "rift-{task}"},
            "im-rift": {**IM, "method": "rift-{task}"},
        },
        "seeds": [0],
        "sizes": [None],
        "train": {},
        "evals": [{"task": "{task}", "split": "test"}],
        "attacks": [
            {"recipe": "pwws", "split": "test", "n": 300, "seed": 0, "protocol": "rift"},
            {"recipe": "genetic", "split": "test", "n": 300, "seed": 0, "protocol": "rift"},
            {"recipe": "ascc", "split": "test", "n": 300, "seed": 0},
        ],
    },
}


def bench_config(spec: str, overrides: list[str] = ()):
    """The BenchConfig of a preset name or a YAML/JSON bench file (its name: the file's stem), with overrides."""
    import os

    from robustft.config import BenchConfig, build_config, read_config_file
    from robustft.errors import ConfigError, suggest

    if spec in PRESETS:
        base = (spec, PRESETS[spec])
    elif not os.path.exists(spec) and "/" not in spec and not spec.endswith((".yaml", ".yml", ".json")):
        raise ConfigError(
            f"unknown preset '{spec}'{suggest(spec, PRESETS)}: give one of {', '.join(PRESETS)} or a bench file"
        )
    else:
        base = (spec, {"name": os.path.splitext(os.path.basename(spec))[0], **read_config_file(spec)})
    return build_config(BenchConfig, [], overrides, base=base)
