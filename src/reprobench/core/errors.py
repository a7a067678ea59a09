"""Errors that name the key, value or file that caused them."""


class ReprobenchError(Exception):
    """A user-facing error: the message says what is wrong and where; no traceback is needed."""


class ConfigError(ReprobenchError):
    def __init__(self, key: str, message: str):
        super().__init__(f"config key '{key}': {message}")
        self.key = key


class ResultsFileError(ReprobenchError):
    """A results file (curve, metrics table, threshold) that is missing, unreadable or not what its reader needs."""

    def __init__(self, path, message: str):
        super().__init__(f"file {path}: {message}")
        self.path = str(path)
