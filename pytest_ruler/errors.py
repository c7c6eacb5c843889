"""Usage errors with one shape: the parameter, the bad value, and the fix.

Every user-facing validation in pytest-ruler raises :class:`RulerUsageError`, so
the CLI and (later) the pytest plugin can print it once, at start-up, without a
traceback.
"""

from __future__ import annotations

__all__ = ["RulerUsageError", "RulerDataError"]


class RulerUsageError(ValueError):
    """A bad option or argument: names the parameter, the value and the fix."""

    def __init__(self, parameter: str, value: object, fix: str) -> None:
        self.parameter = parameter
        self.value = value
        self.fix = fix
        super().__init__(f"{parameter}={value!r} is invalid: {fix}")


class RulerDataError(RulerUsageError):
    """A data file (essays, SQuAD, HotpotQA) that cannot be used as given."""
