"""Where the run's state lives on pytest's objects (import-light: the entry module reads them).

``SESSION_KEY``: the process's :class:`~pytest_ruler.run.session.RulerSession` in
``config.stash`` (set only when the suite is active). ``RESULT_ATTR``: the item
attribute holding the results a test recorded; ``pytest_runtest_makereport`` copies
them onto the test report, which carries them to an xdist controller.

Public names: ``SESSION_KEY``, ``RESULT_ATTR``.
"""

from __future__ import annotations

from typing import Any

import pytest

__all__ = ["RESULT_ATTR", "SESSION_KEY"]

SESSION_KEY = pytest.StashKey[Any]()
RESULT_ATTR = "ruler_result"
