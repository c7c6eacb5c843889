"""The run's seams (run.seams) say what each consumer uses of the session, and stay true.

Read from the source with ``ast`` (nothing runs, no model loads): every ``session.X`` a consumer
reads is a member of the Protocol it names, and every member of every Protocol is one the
``RulerSession`` has, so a consumer that starts to use more of the session, or a session that
drops a member, fails here with the name.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path
from typing import Protocol

import pytest

from pytest_ruler.run import seams
from pytest_ruler.run.session import RulerSession

RUN = Path(seams.__file__).parent
# consumer module -> (its seam, the names the session goes by in it)
CONSUMERS = {
    "runner.py": (seams.ItemSession, {"session"}),
    "preflight.py": (seams.StartSession, {"session"}),
    "eta.py": (seams.ClockSession, {"session", "self.session"}),
    "outcome.py": (seams.RecordSession, {"self.session", "rs"}),
}
PROTOCOLS = (seams.RunView, seams.Prompting, seams.ItemSession, seams.StartSession, seams.RecordSession, seams.ClockSession,
             seams.EngineHandle)


def members(protocol: type) -> set[str]:
    """A Protocol's members, its bases' included."""
    out: set[str] = set()
    for cls in protocol.__mro__:
        if cls in (Protocol, object) or not getattr(cls, "_is_protocol", False):
            continue
        out |= {n for n in vars(cls) if not n.startswith("_")} | set(getattr(cls, "__annotations__", {}))
    return out


def used(path: Path, names: set[str]) -> set[str]:
    """The attributes read or set on ``names`` (``session.config`` -> ``config``) in a module."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and ast.unparse(node.value) in names:
            found.add(node.attr)
        elif isinstance(node, ast.Call) and ast.unparse(node.func) == "getattr" and len(node.args) >= 2:
            if ast.unparse(node.args[0]) in names and isinstance(node.args[1], ast.Constant):
                found.add(node.args[1].value)
    return found


@pytest.mark.parametrize("module", sorted(CONSUMERS))
def test_a_consumer_uses_only_its_seam(module):
    protocol, names = CONSUMERS[module]
    extra = used(RUN / module, names) - members(protocol)
    assert not extra, f"run/{module} uses {sorted(extra)} of the session: add them to run.seams.{protocol.__name__} (or use less)"
    assert used(RUN / module, names), f"run/{module}: no use of {names} found; the scan is reading the wrong names"


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=lambda p: p.__name__)
def test_the_session_has_every_member_of_every_seam(protocol):
    have = set(dir(RulerSession)) | {f.name for f in dataclasses.fields(RulerSession)}
    missing = members(protocol) - have
    assert not missing, f"RulerSession lacks {sorted(missing)} of run.seams.{protocol.__name__}"


def test_the_scan_can_fail(tmp_path):
    """A consumer reading a member its seam does not name is caught."""
    path = tmp_path / "consumer.py"
    path.write_text("def f(session):\n    session.config\n    session.engine.generate([])\n    getattr(session, 'workers', 1)\n")
    assert used(path, {"session"}) == {"config", "engine", "workers"}
    assert used(path, {"session"}) - members(seams.ItemSession) == {"engine", "workers"}
