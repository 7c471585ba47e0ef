"""One config system for every verb: a dataclass per verb, built by one loader from defaults, YAML/JSON files and
`--key value` overrides, validated where it is built (range and finiteness, one message naming the key), hashed.

Dotted keys reach into dict-valued fields: `--im.K=3` sets `cfg.im["K"] = 3`, `--method_args.beta=5` sets
`cfg.method_args["beta"] = 5`. A command-line value is read as the type its key declares: a string key keeps the
text as typed (`--output_dir '~'`, `--label yes`, `--task 1e3` stay strings), a number key takes a number, a bool
key true/false/yes/no/on/off/1/0. Only list- and dict-valued keys, the values of dotted keys and config files are
read as YAML (3 -> int, 1e-5 -> float, true -> bool). One spelling, snake_case (`--max_length`); the old hyphenated
and renamed flags still work with a warning.

Modules: `checks` (every value's kind, finiteness, range and choices), `fields` (the parts of a config and its
hash), `verbs` (each verb's config) and `loading` (defaults, files and overrides into a config).
"""

from robustft.config.checks import parse_shard, validate
from robustft.config.fields import PRECISIONS, config_hash, hashed_settings
from robustft.config.loading import (
    apply_overrides,
    build_config,
    copy_config,
    describe_keys,
    explicit_keys,
    parse_value,
    read_config_file,
)
from robustft.config.verbs import (
    VERB_CONFIGS,
    AttackConfig,
    BenchConfig,
    EvalConfig,
    ProbeConfig,
    ReportConfig,
    TrainConfig,
)

__all__ = ["VERB_CONFIGS", "AttackConfig", "BenchConfig", "EvalConfig", "ProbeConfig", "ReportConfig", "TrainConfig"]
__all__ += ["PRECISIONS", "apply_overrides", "build_config", "config_hash", "copy_config", "describe_keys"]
__all__ += ["explicit_keys", "hashed_settings", "parse_shard", "parse_value", "read_config_file", "validate"]
