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
