"""Shared helpers of the pytester integration tests."""

from __future__ import annotations

import json

import pytest

SCRIPTED = ["--ruler-model=smollm2-135m", "--ruler-backend=scripted"]
XDIST = [pytest.param([], id="n0"), pytest.param(["-n", "2"], id="n2")]


def run(pytester, *args):
    # in-process (fast); xdist workers are still real subprocesses
    return pytester.runpytest("-p", "no:hypothesispytest", *args)


def report(pytester, name="r.json"):
    return json.loads((pytester.path / name).read_text())
