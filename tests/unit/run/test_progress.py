"""Progress of an engine call: a tqdm bar on a terminal, plain lines through ``say`` elsewhere.

A ticking thread keeps either moving while no answer arrives (a CPU batch can
take minutes); it stops, and the bar is erased, when the call ends — also when
the engine raises. Generating the samples says how far it is at the same rate
(``generation_lines``, on a fake clock here).
"""

from __future__ import annotations

import io
import re
import threading
import time

import pytest

from pytest_ruler.engines.base import Completion, GenerationRequest
from pytest_ruler.run_config import RulerConfig
from pytest_ruler.run.progress import Progress, generation_lines
from pytest_ruler.run.session import RulerSession


class Tty(io.StringIO):
    def isatty(self):
        return True

    def fileno(self):  # no real terminal: tqdm falls back to its default width
        raise io.UnsupportedOperation("fileno")


def _ticker_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "ruler-progress"]


@pytest.fixture(autouse=True)
def _not_a_worker(monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)


def test_terminal_bar_moves_without_results_and_is_erased(monkeypatch):
    out, said = Tty(), []
    p = Progress("vt[4096-seed0]", total=3, stream=out, say=said.append, interval=0.03, position="item 2/5")
    time.sleep(0.1)
    p.advance(100)
    drawn = out.getvalue()
    time.sleep(0.15)  # no answer: the thread still redraws (elapsed, ETA)
    assert len(out.getvalue()) > len(drawn)
    p.close()
    text = out.getvalue()
    assert text.startswith("\x1bD\x1bM\x1b7\n")  # a line of its own below pytest's, the cursor saved
    assert "item 2/5 vt[4096-seed0]:" in text and "1/3 prompts" in text and "tok/s" in text
    assert text.endswith("\r\x1b[K\x1b8")  # erased, the cursor back where pytest left it
    assert said == [] and p.bar is None and not p._thread.is_alive()


def test_without_a_terminal_plain_lines_go_through_say_while_no_result_arrives():
    out, said = io.StringIO(), []
    with Progress("niah_single_2[4096-seed0]", total=3, stream=out, say=said.append, interval=0.05, position="item 1/1") as p:
        time.sleep(0.3)
        p.advance(50)
        time.sleep(0.12)
    count = len(said)
    assert count >= 3
    assert re.fullmatch(r"ruler: item 1/1 niah_single_2\[4096-seed0\]: 0/3 prompts, \d+s, [\d,]+ tok/s", said[0])
    assert said[-1].startswith("ruler: item 1/1 niah_single_2[4096-seed0]: 1/3 prompts")
    assert out.getvalue() == ""  # nothing written to the stream itself
    time.sleep(0.12)
    assert len(said) == count and not p._thread.is_alive()  # stopped with the call


def test_a_recent_line_delays_the_first_plain_line():
    said: list[str] = []
    with Progress("x", total=1, stream=None, say=said.append, interval=0.2, since=time.perf_counter()):
        time.sleep(0.1)
    assert said == []


def test_xdist_workers_never_draw(monkeypatch):
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    out, said = Tty(), []
    with Progress("x", total=1, stream=out, say=said.append, interval=0.03) as p:
        time.sleep(0.1)
        p.advance(1)
    assert out.getvalue() == "" and said and said[0].startswith("ruler: x: 0/1 prompts")


def test_a_line_said_during_the_call_hides_the_bar_first():
    out = Tty()
    p = Progress("x", total=2, stream=out, say=lambda line: None, interval=10)
    with p.hidden():
        assert out.getvalue().endswith("\r\x1b[K\x1b8")
    p.close()


class _SlowEngine:
    name = "slow"

    def __init__(self, fail: bool = False):
        self.fail = fail

    def generate(self, requests, on_result=None):
        time.sleep(0.25)  # one batch: no answer for a while
        if self.fail:
            raise RuntimeError("engine broke")
        out = [Completion("a", r.prompt_tokens, 1, "stop") for r in requests]
        for i, c in enumerate(out):
            if on_result:
                on_result(i, c)
        return out


def _session(engine) -> tuple[RulerSession, list[str]]:
    said: list[str] = []
    rs = RulerSession(RulerConfig(model="smollm2-135m", backend="scripted", no_cache=True), None)
    rs._identity, rs._engine, rs.notify = {"engine": "slow"}, engine, said.append
    rs._terminal, rs.progress_interval, rs.position = None, 0.05, "item 3/10"
    rs._said_at = time.perf_counter()
    return rs, said


REQUESTS = [GenerationRequest(f"p{i}", (1, 2, i), 4) for i in range(2)]


@pytest.mark.parametrize("fail", [False, True])
def test_session_complete_says_lines_and_stops_the_ticker(fail):
    rs, said = _session(_SlowEngine(fail=fail))
    if fail:
        with pytest.raises(RuntimeError, match="engine broke"):
            rs.complete(REQUESTS, label="vt[1024-seed0]")
    else:
        done, from_cache = rs.complete(REQUESTS, label="vt[1024-seed0]")
        assert [c.text for c in done] == ["a", "a"] and from_cache == [False, False]
    assert said and said[0].startswith("ruler: item 3/10 vt[1024-seed0]: 0/2 prompts")
    assert all(re.match(r"ruler: item 3/10 vt\[1024-seed0\]: [0-2]/2 prompts", line) for line in said)
    assert rs._progress is None and _ticker_threads() == []


def test_an_engine_report_inside_a_batch_shows_in_the_line_and_the_rate():
    said = []
    with Progress("niah_single_1[8192-seed0]", total=2, stream=io.StringIO(), say=said.append, interval=60) as p:
        assert p.line().startswith("ruler: niah_single_1[8192-seed0]: 0/2 prompts, ")
        p.working(2, 16000, 0, 128)  # the sub-batch started: its prompts are being read
        assert "0/2 prompts (2 in the engine: reading the prompts), " in p.line()
        assert p.rate == 0  # nothing read yet
        p.working(2, 16000, 12, 128)  # 12 decoding steps later
        assert "0/2 prompts (2 in the engine: 12 of at most 128 new tokens), " in p.line()
        assert p.rate > 0 and re.search(r", [\d,]+ tok/s$", p.line())
        p.advance(8064)  # an answer: what was in flight is counted by the answers from now on
        assert "in the engine" not in p.line() and "1/2 prompts, " in p.line()


def test_the_hf_engine_reports_every_decoding_step_without_stopping_anything():
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from pytest_ruler.engines.base import GenerationRequest
    from pytest_ruler.engines.hf import HFEngine

    calls = []

    class Fake:
        on_progress = staticmethod(lambda *a: calls.append(a))

    batch = [GenerationRequest("a", (1, 2, 3), 16), GenerationRequest("b", (4, 5), 16)]
    kwargs = HFEngine._steps(Fake(), batch, 3, 16)
    assert calls == [(2, 5, 0, 16)]  # the sub-batch's start
    (step,) = kwargs["stopping_criteria"]
    done = kwargs["stopping_criteria"](torch.zeros((2, 3 + 4), dtype=torch.long), None)
    assert calls[-1] == (2, 5, 4, 16) and step is not None
    assert done.tolist() == [False, False]

    class Silent:
        on_progress = None

    assert HFEngine._steps(Silent(), batch, 3, 16) == {}


class FakeClock:
    """Seconds that pass only when a test says so."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_generating_samples_says_how_far_it_is_once_per_interval_of_silence():
    clock, said = FakeClock(), []
    last = {"said": 0.0}

    def say(line):
        said.append(line)
        last["said"] = clock.now

    def samples():
        for i in range(10):
            clock.now += 12.0  # each sample takes 12 s to generate
            yield i

    got = list(generation_lines(samples(), label="niah_single_1[131072-seed0]", total=10, say=say, interval=30.0,
                                last_said=lambda: last["said"], position="item 1/4", clock=clock))
    assert got == list(range(10))  # every sample, in order
    # silent for 36 s after the 3rd sample, then 36 s after the 6th, the 9th
    assert said == ["ruler: item 1/4 generating samples: niah_single_1[131072-seed0] 3/10, 36s",
                    "ruler: item 1/4 generating samples: niah_single_1[131072-seed0] 6/10, 72s",
                    "ruler: item 1/4 generating samples: niah_single_1[131072-seed0] 9/10, 108s"]


def test_a_line_said_by_someone_else_counts_as_said():
    clock, said = FakeClock(), []

    def samples():
        for i in range(5):
            clock.now += 20.0
            yield i

    # the engine's progress (another caller of say) spoke just now, every time
    list(generation_lines(samples(), label="vt[4096-seed0]", total=5, say=said.append, interval=30.0,
                          last_said=lambda: clock.now, clock=clock))
    assert said == []
