"""Errors a user can act on. The CLI prints them as one line, without a traceback."""


class RobustftError(Exception):
    """Base class for every error caused by user input or the environment, not by a bug."""


class MissingResource(RobustftError):
    """A data file, model or lexical resource is not where the resolver looked."""


class DataFormatError(RobustftError):
    """A data file is malformed; the message names the file and the line."""

    def __init__(self, path, line: int | None, problem: str):
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {problem}")
        self.path, self.line, self.problem = path, line, problem


class ConfigError(RobustftError):
    """A configuration key or value is wrong."""


def suggest(name: str, known) -> str:
    """A hint for the one-line error that refuses an unknown task, method, recipe, preset or command:
    " (did you mean 'sst2'?)" when `name` is a near miss of one of `known` (difflib), else ""."""
    import difflib

    close = difflib.get_close_matches(str(name), [str(k) for k in known], n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""
