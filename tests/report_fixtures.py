"""Run folders in the run layer's schema, written by hand so report tests know every number in them.

`write_fixture_runs(root)` writes a small bench: MiniLM on SST-2, plain+standard (seeds 0, 1, at 1,000
and 100 training examples), im+standard (seeds 0, 1) and plain+rift (seed 0); clean dev evals, a
TextFooler attack on 40 test examples, the six AdvGLUE splits for plain+standard and im+standard seed 0,
and a probe. Correctness patterns are fixed so that im+standard beats plain+standard under attack on
every seed (20 discordant pairs, all one way) and plain+rift does not differ from it."""

from __future__ import annotations

import json
import random
from pathlib import Path

WORDS = "the film is a great and moving story told with care but slow <b>".split()
ADVGLUE_SIZES = {
    "advglue-sst2": 12,
    "advglue-qqp": 10,
    "advglue-qnli": 8,
    "advglue-rte": 8,
    "advglue-mnli": 9,
    "advglue-mnli-mm": 9,
}


def train_config(method="standard", arch="plain", seed=0, n_train=1000) -> dict:
    return {
        "model": "minilm",
        "task": "sst2",
        "method": method,
        "method_args": {},
        "arch": arch,
        "im": {"K": 3, "eta": 0.1} if arch == "im" else {},
        "seed": seed,
        "n_train": n_train,
        "per_class": None,
        "train_split": "train",
        "data_seed": 0,
        "epochs": 3,
    }


def _write(folder: Path, meta: dict, metrics: dict, examples: list[dict] | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(
        json.dumps({"robustft_run": 1, "hash": folder.name, "versions": {}, "inputs": {}, **meta}, indent=2)
    )
    (folder / "metrics.json").write_text(json.dumps({**metrics, "complete": True}, indent=2))
    if examples is not None:
        (folder / "examples.jsonl").write_text("".join(json.dumps(e) + "\n" for e in examples))
    return folder


def write_train(root: Path, name: str, cfg: dict, dev_accuracy: float) -> Path:
    metrics = {
        "best": {"epoch": 2, "dev_accuracy": dev_accuracy, "dev_n": 872},
        "history": [],
        "n_train": cfg["n_train"],
        "n_dev": 872,
        "train_time_s": 60.0 + cfg["seed"],
    }
    return _write(root / name, {"verb": "train", "config": cfg}, metrics)


def write_eval(
    root: Path, name: str, model_cfg: dict, task: str, split: str, labels: list[int], predictions: list[int]
) -> Path:
    examples = [
        {"index": i, "id": f"{task}-{split}-{i}", "label": y, "prediction": p, "correct": p == y, "probs": [0.5, 0.5]}
        for i, (y, p) in enumerate(zip(labels, predictions, strict=True))
    ]
    accuracy = sum(e["correct"] for e in examples) / len(examples)
    meta = {
        "verb": "eval",
        "config": {"task": task, "split": split, "n": None, "seed": 0},
        "model_run": {"path": f"runs/{model_cfg['method']}", "config": model_cfg},
    }
    return _write(
        root / name,
        meta,
        {
            "task": task,
            "split": split,
            "n": len(examples),
            "accuracy": accuracy,
            "accuracy_ci95": [0.0, 1.0],
            "loss": 0.5,
        },
        examples,
    )


def attack_record(i: int, label: int, result: str, rng: random.Random) -> dict:
    words = [rng.choice(WORDS) for _ in range(8)]
    original = " ".join(words)
    swaps = []
    adversarial_words = list(words)
    if result == "succeeded":
        swaps = [{"index": 1, "original": words[1], "new": "superb"}]
        adversarial_words[1] = "superb"
    return {
        "index": i,
        "id": f"sst2-test-{i}",
        "label": label,
        "result": result,
        "original": original,
        "adversarial": " ".join(adversarial_words),
        "perturbed_field": "text_a",
        "context": None,
        "original_pred": label if result != "skipped" else 1 - label,
        "adversarial_pred": (1 - label) if result == "succeeded" else label if result == "failed" else None,
        "original_probs": None,
        "adversarial_probs": None,
        "swaps": swaps,
        "num_words": 8,
        "queries": 20 + i,
        "seconds": 0.1,
        "reason": "",
    }


def write_attack(root: Path, name: str, model_cfg: dict, results: list[str]) -> Path:
    from robustft.attacks.results import AttackRecord, summarize

    rng = random.Random(len(name))
    records = [attack_record(i, i % 2, r, rng) for i, r in enumerate(results)]
    metrics = summarize([AttackRecord.from_dict(r) for r in records])
    meta = {
        "verb": "attack",
        "config": {
            "task": "sst2",
            "split": "test",
            "recipe": "textfooler",
            "protocol": None,
            "n": len(results),
            "seed": 0,
            "attack": {"deviations": ["TextFooler neighbours: 8 counter-fitted instead of 50 embedding neighbours"]},
        },
        "model_run": {"path": "runs/x", "config": model_cfg},
    }
    return _write(root / name, meta, metrics, records)


# Under attack (40 examples): baseline seed s keeps FAILED on 10 + s, IM on 30 + s (a superset), RIFT like the
# baseline seed 0 with 2 swapped one way and 2 the other.
def attack_results(kept: int, skipped: int = 4, n: int = 40) -> list[str]:
    return ["failed"] * kept + ["skipped"] * skipped + ["succeeded"] * (n - kept - skipped)


def write_advglue(root: Path, prefix: str, model_cfg: dict, wrong_every: int) -> None:
    for split, size in ADVGLUE_SIZES.items():
        classes = 3 if "mnli" in split else 2
        labels = [i % classes for i in range(size)]
        predictions = [(y + 1) % classes if i % wrong_every == 0 else y for i, y in enumerate(labels)]
        write_eval(root, f"{prefix}-{split}", model_cfg, split, "dev", labels, predictions)


def write_probe(root: Path) -> Path:
    probe = {
        "task": "sst2",
        "split": "dev",
        "n_pairs": 20,
        "perturbation": "1 counter-fitted swap(s)",
        "seed": 0,
        "settings": {"BERT": None, "IM-BERT": {"K": 3}},
        "results": {
            "BERT": {
                "n_pairs": 20,
                "distance_mean": [0.2, 0.15, 0.14, 0.16],
                "distance_std": [0.1, 0.08, 0.07, 0.09],
                "residual": {},
            },
            "IM-BERT": {
                "n_pairs": 20,
                "distance_mean": [0.2, 0.12, 0.1, 0.11],
                "distance_std": [0.1, 0.06, 0.05, 0.06],
                "residual": {},
            },
        },
    }
    folder = _write(root / "probe", {"verb": "probe", "config": {"task": "sst2", "split": "dev", "n": 20}}, {})
    (folder / "probe.json").write_text(json.dumps(probe))
    return folder


def write_fixture_runs(root: Path) -> Path:
    root = Path(root)
    dev_labels = [i % 2 for i in range(20)]
    for seed in (0, 1):
        std, im = train_config(seed=seed), train_config(arch="im", seed=seed)
        write_train(root, f"train-std-s{seed}", std, 0.85 + 0.01 * seed)
        write_train(root, f"train-im-s{seed}", im, 0.86 + 0.01 * seed)
        write_eval(
            root,
            f"eval-std-s{seed}",
            std,
            "sst2",
            "dev",
            dev_labels,
            [y if i >= 3 + seed else 1 - y for i, y in enumerate(dev_labels)],
        )  # 17 / 18 of 20
        write_eval(
            root,
            f"eval-im-s{seed}",
            im,
            "sst2",
            "dev",
            dev_labels,
            [y if i >= 2 else 1 - y for i, y in enumerate(dev_labels)],
        )  # 18 of 20
        write_attack(root, f"attack-std-s{seed}", std, attack_results(10 + seed))
        write_attack(root, f"attack-im-s{seed}", im, attack_results(30 + seed))
        small = train_config(seed=seed, n_train=100)
        write_train(root, f"train-std100-s{seed}", small, 0.7 + 0.02 * seed)
        write_attack(root, f"attack-std100-s{seed}", small, attack_results(5 + seed))
    rift = train_config(method="rift")
    write_train(root, "train-rift-s0", rift, 0.84)
    results = attack_results(10)
    results[0], results[1] = "succeeded", "succeeded"  # 2 lost ...
    results[-1], results[-2] = "failed", "failed"  # ... and 2 gained against the baseline seed 0
    write_attack(root, "attack-rift-s0", rift, results)
    write_advglue(root, "adv-std-s0", train_config(), wrong_every=2)
    write_advglue(root, "adv-im-s0", train_config(arch="im"), wrong_every=3)
    sst2 = [i % 2 for i in range(ADVGLUE_SIZES["advglue-sst2"])]
    write_eval(root, "adv-rift-s0-advglue-sst2", rift, "advglue-sst2", "dev", sst2, sst2)  # one task only
    write_probe(root)
    return root
