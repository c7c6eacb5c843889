"""Secrets never reach reports: the recorded command line, the per-sample predictions; the key's one reader and one scrub rule."""

from __future__ import annotations

import json

import pytest

from pytest_ruler.errors import RulerUsageError
from pytest_ruler.run.runner import _Ref, prediction_records
from pytest_ruler.secrets import MIN_SCRUBBED_LENGTH, SECRET_MARK, api_key, scrub, scrub_command


def test_scrub_command_masks_keys_urls_and_the_environment_key(monkeypatch):
    monkeypatch.setenv("RULER_API_KEY", "sk-env-abcdef")
    argv = ["pytest", "--ruler-engine-option", "api_key=sk-1,timeout=30", "--ruler-engine-option=token=t0k3n",
            "--ruler-base-url=https://bob:hunter2@example.com/v1?key=zzz", "-k", "sk-env-abcdef", "--ruler-samples=3",
            "Authorization: Bearer abc.def"]
    out = scrub_command(argv)
    assert out[0] == "pytest" and out[1] == "--ruler-engine-option" and out[-2] == "--ruler-samples=3"
    assert out[2] == f"api_key={SECRET_MARK},timeout=30" and out[3] == f"--ruler-engine-option=token={SECRET_MARK}"
    assert out[4] == f"--ruler-base-url=https://{SECRET_MARK}@example.com/v1?{SECRET_MARK}"
    assert out[6] == SECRET_MARK
    joined = " ".join(out)
    for secret in ("sk-1", "t0k3n", "bob", "hunter2", "zzz", "sk-env-abcdef", "abc.def"):
        assert secret not in joined


def test_prediction_records_are_scrubbed_model_output(monkeypatch):
    monkeypatch.setenv("RULER_API_KEY", "sk-env-abcdef")
    refs = [_Ref(0, ("1234567",), "h0"), _Ref(1, ("42",), "h1")]
    records = prediction_records(refs, ["the key is sk-env-abcdef", "42"], [0.0, 1.0])
    assert records == ({"index": 0, "prediction": f"the key is {SECRET_MARK}", "answers": ["1234567"], "score": 0.0, "prompt_hash": "h0"},
                       {"index": 1, "prediction": "42", "answers": ["42"], "score": 1.0, "prompt_hash": "h1"})


# ----------------------------------------------------------------- the key: one reader, one scrub rule


def test_the_key_loses_surrounding_whitespace_and_blank_means_unset(monkeypatch):
    monkeypatch.setenv("RULER_API_KEY", "  sk-from-a-crlf-file\r")
    assert api_key() == "sk-from-a-crlf-file"
    monkeypatch.setenv("RULER_API_KEY", " \r\n")
    assert api_key() is None
    monkeypatch.delenv("RULER_API_KEY")
    assert api_key() is None


@pytest.mark.parametrize("key, what", [("sk-two\r\nlines-9f3a", "U+000D (carriage return) at position 7"),
                                       ("sk-\x1besc-9f3a2b", "U+001B (escape)"), ("sk-tab\there-9f3a", "U+0009 (tab)"),
                                       ("sk-ünïcode-9f3a", "outside printable ASCII")])
def test_a_key_with_a_control_or_non_ascii_character_is_one_line_without_the_key(monkeypatch, key, what):
    monkeypatch.setenv("RULER_API_KEY", key)
    with pytest.raises(RulerUsageError) as err:
        api_key()
    message = str(err.value)
    assert err.value.parameter == "RULER_API_KEY" and what in message
    assert "\n" not in message and "\r" not in message
    for part in key.replace("\r\n", " ").split():
        assert part not in message


def test_a_long_key_is_scrubbed_everywhere_also_json_escaped(monkeypatch):
    key = 'sk-"q"\\k-0123'
    monkeypatch.setenv("RULER_API_KEY", key)
    assert scrub(f"a {key} b") == f"a {SECRET_MARK} b"
    serialised = json.dumps({"text": f"a {key} b"})
    assert key not in scrub(serialised) and json.loads(scrub(serialised)) == {"text": f"a {SECRET_MARK} b"}


@pytest.mark.parametrize("key", ["x", "te", "1234567"])
def test_a_short_key_is_scrubbed_only_as_an_echoed_bearer_header(monkeypatch, key):
    assert len(key) < MIN_SCRUBBED_LENGTH
    monkeypatch.setenv("RULER_API_KEY", key)
    answer = f'{{"text": "the {key}{key} xylophone text 1234567"}}'
    assert scrub(answer) == answer  # ordinary text, JSON included, is never rewritten
    assert scrub(f"bad auth: Bearer {key}") == f"bad auth: Bearer {SECRET_MARK}"
    assert scrub(f"Bearer {key}abc") == f"Bearer {key}abc"  # another token, not the key
