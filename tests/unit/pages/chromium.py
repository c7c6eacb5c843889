"""Headless Chromium for the pages' browser tests (the per-run page here; the trend page's test can use
it too): find the browser, open a page from a file with the network off, read the DOM after its scripts
ran, the console lines on stderr, or a screenshot.

Without Chromium: ``pytest.skip`` with the reason, except when ``CI`` is set (``CI=true``), where it is
``pytest.fail``: CI installs Debian's chromium (``.ci/run``), and a browser test that skips there would
pass without testing anything.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

NAMES = ("chromium", "chromium-browser", "google-chrome", "chrome")
TIMEOUT = 240  # one Chromium start on a loaded 2-core machine: seconds, not minutes


def chromium() -> str:
    found = next((p for p in map(shutil.which, NAMES) if p), None)
    if found:
        return found
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail("no Chromium on PATH (looked for chromium, chromium-browser, google-chrome): CI installs Debian's "
                    "chromium in .ci/run (apt-get install -y chromium); did that step fail?")
    pytest.skip("no Chromium on PATH: install Debian's chromium (apt-get install -y chromium) to run the browser test")


def open_page(page: Path, tmp: Path, *, fragment: str = "", screenshot: Path | None = None) -> tuple[str, str]:
    """(the DOM after the page's scripts ran, Chromium's stderr) of ``page`` opened from a file, offline."""
    flags = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
             "--no-default-browser-check", "--disable-extensions", f"--user-data-dir={tmp / 'profile'}",
             "--host-resolver-rules=MAP * ~NOTFOUND", "--enable-logging=stderr", "--v=0", "--window-size=1280,2000"]
    url = page.resolve().as_uri() + fragment
    action = [f"--screenshot={screenshot}"] if screenshot is not None else ["--dump-dom"]
    done = subprocess.run([*flags, *action, url], capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout, done.stderr


def console_errors(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if "CONSOLE" in ln or "Uncaught" in ln or "Refused to" in ln]
