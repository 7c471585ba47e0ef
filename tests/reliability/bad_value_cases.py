"""A catalogue of bad settings (issue 52, items 4-6) and how each must end: a one-line `RobustftError` whose message
holds `expected`. Checked in-process through `build_config` (the loader every verb and the CLI use) and what a verb
checks before it loads anything (tests/checked_config.py), or through the recipe loader for attack settings; used
by tests/reliability/test_bad_values.py and scripts/probe_bad_inputs.py.

`outcome(case)` classifies a case the way the probe counts it: "clean" (a one-line RobustftError naming the
key), "traceback" (any other exception, or an unclear message) or "silent" (accepted).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BadValue:
    name: str
    verb: str  # a VERB_CONFIGS key, or "recipe" (an attack's recipe_args, checked by the recipe loader)
    argv: tuple[str, ...]  # as typed after `robustft VERB`
    expected: str  # a part of the one-line message


def case(verb: str, argv: str, expected: str, name: str | None = None) -> BadValue:
    return BadValue(name or f"{verb} {argv}", verb, tuple(argv.split()), expected)


RIFT = "--method rift "
CASES: list[BadValue] = [
    # item 5: tracebacks before, now one line naming the key
    case("train", "--im.K nan", "im.K: must be a finite number"),
    case("train", "--im.K abc", "im.K must be a whole number >= 0"),
    case("train", "--im.K 2.5", "im.K must be a whole number"),
    case("train", "--im.K 1e30", "im.K must be at most 1000"),
    case("train", "--im.layers yes", "im.layers"),
    case("train", RIFT + "--method_args.beta abc", "method_args.beta: method 'rift' expects a number or null"),
    case("train", "--seed 1e30", "seed: must be at most 4294967295"),
    case("train", "--seed -1", "seed: must be at least 0"),
    case("train", "--data_seed 4294967296", "data_seed: must be at most 4294967295"),
    case("train", "--threads 1000000000", "threads: must be at most"),
    case("train", "--threads 1e9", "threads: must be at most"),
    case("train", "--batch_size 1e12", "batch_size: must be at most 2147483647"),
    case("train", "--epochs three", "'epochs' expects a whole number"),
    case("train", "--epochs 2.5", "'epochs' expects a whole number"),
    case("train", "--lr abc", "'lr' expects a number"),
    case("train", "--progress maybe", "'progress' expects true or false"),
    case("eval", "--model m --seed 1e30", "seed: must be at most 4294967295"),
    case("eval", "--model m -n nan", "'n' expects a whole number or none"),
    case("eval", "--model m --threads 1000000000", "threads: must be at most"),
    case("attack", "--model m --seed 4294967296", "seed: must be at most 4294967295"),
    case("probe", "--models m --im.eta inf", "im.eta: must be a finite number"),
    case("bench", "--seeds [-1]", "seeds: every seed must be a whole number"),
    # item 6: values that trained another model than the one named, now refused
    case("train", "--arch im --im.eta inf", "im.eta: must be a finite number"),
    case("train", "--arch im --im.eta 1e30", "im.eta must be at most 1 with solver gd"),
    case("train", "--arch im --im.eta 0", "im.eta must be a number > 0"),
    case(
        "train",
        "--arch im --im.solver gd-backtracking --im.eta 1e6",
        "im.eta / 2**im.halvings (the smallest step gd-backtracking tries) must be at most 1",
    ),
    case("train", "--arch im --im.dt -1", "im.dt must be a number > 0"),
    case("train", "--arch im --im.tol 1e9", "im.tol must be at most 1"),
    case("train", "--arch im --im.memory 0", "im.memory must be a whole number >= 1"),
    case("train", RIFT + "--method_args.beta -5", "method_args.beta: must be >= 0, got -5"),
    case("train", RIFT + "--method_args.steps 0", "method_args.steps: must be >= 1"),
    case("train", RIFT + "--method_args.slots 0", "method_args.slots: must be >= 1"),
    case("train", RIFT + "--method_args.tau 0", "method_args.tau: must be > 0"),
    case("train", RIFT + "--method_args.betta 5", "did you mean 'beta'?"),
    case("train", RIFT + "--method_args.conditional_mi 3", "method_args.conditional_mi: method 'rift' expects true"),
    case("train", "--method trades --method_args.beta -1", "method_args.beta: must be >= 0"),
    case("train", "--method pgd --method_args.steps 2.5", "method_args.steps: method 'pgd' expects a whole number"),
    case("train", "--method standard --method_args.label_smoothing 2", "method_args.label_smoothing: must be"),
    case("train", "--method rif", "unknown method 'rif'; did you mean 'rift'?"),
    case("train", "--epoch 3", "unknown config key 'epoch'; did you mean 'epochs'?"),
    case("recipe", "textfooler --max_candidates 0", "recipe_args.max_candidates: expects a whole number >= 1"),
    case("recipe", "textfooler --max_candidates -1", "recipe_args.max_candidates: expects a whole number >= 1"),
    case("recipe", "genetic --generations 0", "recipe_args.generations: expects a whole number >= 1"),
    case("recipe", "pwws --max_candidates abc", "recipe_args.max_candidates: expects a whole number >= 1"),
    case("recipe", "textfooler --antonym_filter maybe", "recipe_args.antonym_filter: expects true or false"),
    # item 4: a value YAML would misread; a path starting with '~' is refused, never the default folder
    case("train", "--output_dir ~", "output_dir: '~' starts with '~'"),
    case("train", "--output_dir ~/runs/a", "output_dir: '~/runs/a' starts with '~'"),
    case("eval", "--model m --output_dir ~", "output_dir: '~' starts with '~'"),
]

# Values YAML would read as something else, typed for string keys: each must stay the string as typed.
STRING_KEYS = ("label", "output_dir", "task")
YAML_LOOKALIKES = ("yes", "no", "on", "off", "null", "none", "1e3", "0x10", "true", "2026-01-01", "[a]", "{a: 1}")


def outcome(case: BadValue) -> tuple[str, str]:
    """("clean" | "traceback" | "silent", the message or what was accepted)."""
    from robustft.errors import RobustftError

    try:
        accepted = _apply(case)
    except RobustftError as exc:
        message = str(exc)
        if "\n" not in message and case.expected in message:
            return "clean", message
        return "traceback", f"unclear error: {message!r}"
    except Exception as exc:  # noqa: BLE001 - classifying, not handling
        return "traceback", f"{type(exc).__name__}: {exc}"[:200]
    return "silent", f"accepted: {accepted}"[:200]


def _apply(case: BadValue):
    from checked_config import checked
    from robustft.cli import split_overrides
    from robustft.config import VERB_CONFIGS, build_config

    if case.verb == "recipe":
        from robustft.attacks.recipes import recipe_config
        from robustft.config import parse_value

        recipe, *pairs = case.argv
        overrides = {k.lstrip("-"): parse_value(v) for k, v in (p.split("=", 1) for p in split_overrides(pairs))}
        return recipe_config(recipe, None, overrides)
    return checked(build_config(VERB_CONFIGS[case.verb], [], split_overrides(list(case.argv))))
