"""Errors that name the key, value or file that caused them."""


class ReprobenchError(Exception):
    """A user-facing error: the message says what is wrong and where; no traceback is needed."""


class ConfigError(ReprobenchError):
    def __init__(self, key: str, message: str):
        super().__init__(f"config key '{key}': {message}")
        self.key = key


class CurveFileError(ReprobenchError):
    def __init__(self, path, message: str):
        super().__init__(f"curve file {path}: {message}")
        self.path = str(path)
