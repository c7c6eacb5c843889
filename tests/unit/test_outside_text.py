"""Text from outside the run is shown with its control characters escaped and the key scrubbed."""

from __future__ import annotations

from pytest_ruler.outside_text import escaped, shown


def test_controls_format_characters_and_surrogates_are_escaped():
    assert escaped("\x1b[2J gate PASSED") == "\\x1b[2J gate PASSED"
    assert escaped("right\u202eto-left \ud800 \x7f") == "right\\u202eto-left \\ud800 \\x7f"
    assert escaped("plain text, ünïcode, 日本語") == "plain text, ünïcode, 日本語"


def test_shown_is_one_scrubbed_line_of_bounded_length(monkeypatch):
    monkeypatch.setenv("RULER_API_KEY", "sk-outside-0123456789")
    text = shown("line one\r\n\tline two \x1b]0;title\x07 sk-outside-0123456789", limit=None)
    assert text == "line one line two \\x1b]0;title\\x07 <secret>"
    assert shown("x" * 500, limit=20) == "x" * 17 + "..."
    assert shown(ValueError("bad \x1b[31m")) == "bad \\x1b[31m"


def test_the_vllm_engines_error_lines_are_escaped():
    """vLLM's messages quote model names and paths: a sample's error and a failed start show them escaped."""
    from pytest_ruler.engines.vllm_model import short_error

    line = short_error(ValueError("no model at /srv/\x1b[2Jm\nsee log"), limit=60)
    assert line == "ValueError: no model at /srv/\\x1b[2Jm see log"
    assert short_error(RuntimeError()) == "RuntimeError: RuntimeError"
