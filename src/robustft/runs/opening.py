"""`open_run`: the one gate every verb writes a run folder through.

It refuses to write into a folder robustft did not create or that holds another verb's run, continues (`resume`)
only with the same settings and inputs and names what changed, reuses a finished run of the same config (resume or
not), and restarts (`overwrite`) only a robustft run of the same verb. It takes the folder's lock *before* it
decides or deletes anything, so a second process on the folder is refused, naming the holder's pid, and two runs
never mix their files.
"""

from __future__ import annotations

from pathlib import Path

from robustft.atomic import atomic_write_json
from robustft.errors import ConfigError
from robustft.runs import lock
from robustft.runs.description import describe, differences, is_finished, resumed_description
from robustft.runs.folder import check_target, clear_outputs, contents, make_folder
from robustft.runs.names import CONFIG, LOCK, METRICS
from robustft.runs.records import read_json
from robustft.runs.run import Run
from robustft.runs.shards import open_shard


def open_run(
    path: str | Path,
    cfg,
    inputs: dict[str, str],
    *,
    resume: bool = False,
    overwrite: bool = False,
    extra: dict | None = None,
    shard: tuple[int, int] | None = None,
) -> Run:
    """Create, continue, reuse or (with `overwrite`) restart the run folder of `cfg`; see the module docstring.
    With `shard` (i, n), open shard i's part of the shared run folder instead (`shards.open_shard`)."""
    if shard is not None:
        return open_shard(path, cfg, inputs, shard, resume=resume, overwrite=overwrite, extra=extra)
    path = Path(path)
    description = describe(cfg, inputs, extra)
    check_target(path, cfg.verb)
    make_folder(path)
    handle = lock.take(path)
    try:
        # again, under the lock: another process may have written it meanwhile
        saved = check_target(path, cfg.verb, locked=True, overwrite=overwrite)
        if overwrite:
            if contents(path):
                clear_outputs(path, keep_locks={LOCK})
        elif saved is not None:
            same = saved.get("hash") == description["hash"]
            if same and is_finished(path):  # its metrics read under the lock: never another run's, rewritten
                finished = Run(path, cfg.verb, saved, finished=True, loaded_metrics=read_json(path / METRICS))
                lock.release(handle)
                return finished
            if not resume:
                what = "a finished run with other settings" if is_finished(path) else "an unfinished run"
                raise ConfigError(
                    f"output_dir: {path} already holds {what} ({differences(saved, description)}); pass --resume "
                    f"to continue it, --overwrite to start again, or choose another folder"
                )
            if not same:
                raise ConfigError(
                    f"cannot resume {path}: {differences(saved, description)}; resume with the same settings and "
                    f"inputs, or --overwrite"
                )
            description = resumed_description(saved, description)
        atomic_write_json(path / CONFIG, description)
    except BaseException:
        lock.release(handle)
        raise
    return Run(path, cfg.verb, description, _lock=handle)
