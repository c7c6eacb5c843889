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


# ----------------------------------------------------------------- what a user typed: one rule (issue 35, item 3)


@pytest.fixture
def typed(monkeypatch):
    """This test's own set of remembered typed secrets (the process's set is left as it was)."""
    from pytest_ruler import secrets

    monkeypatch.setattr(secrets, "_TYPED", set(), raising=False)
    monkeypatch.delenv("RULER_API_KEY", raising=False)
    return secrets._TYPED


NESTED = '{"api_key": "plain key 0451", "metadata": {"token": "nested-tok-8812"}, "temperature": 0, "stop": ["</s>"]}'


def test_a_json_option_value_is_scrubbed_by_key_name_at_any_depth(typed):
    [arg] = scrub_command([f"--ruler-engine-option=extra_body={NESTED}"])
    assert "plain key 0451" not in arg and "nested-tok-8812" not in arg
    head, _, body = arg.partition("extra_body=")
    assert head == "--ruler-engine-option=" and json.loads(body) == {
        "api_key": SECRET_MARK, "metadata": {"token": SECRET_MARK}, "temperature": 0, "stop": ["</s>"]}
    # the whole value of a credential-named key, an object included; other names and values stay
    assert scrub_command(['auth={"user": "bob", "pw": "x"}', "max_tokens=12", "tokenizer=org/tok", "eos_token=</s>"]) == [
        f"auth={SECRET_MARK}", "max_tokens=12", "tokenizer=org/tok", "eos_token=</s>"]
    # not JSON (a Python repr, a quoted header): by name all the same
    assert scrub_command(["extra_body=[{'api_key': 'sk x'}]", '{"Authorization": "Bearer abc"'])[0] == f"extra_body=[{{'api_key': '{SECRET_MARK}'}}]"
    assert "abc" not in scrub_command(['{"Authorization": "Bearer abc"'])[0]
    url = "--ruler-base-url=https://auth.example.com:8443/v1"  # a host's name is no credential's name
    assert scrub_command([url, "https://bob:pw@oauth.example.com:443/v1"]) == [url, f"https://{SECRET_MARK}@oauth.example.com:443/v1"]


@pytest.mark.parametrize("key", ["sk-proj-Ab3dEf6hIj9kLm2nOp5q", "hf_AbCdEfGhIjKlMnOpQrStUv", "ghp_0123456789abcdefghijABCD",
                                 "xoxb-1234567890-abcdefghij", "AKIAABCDEFGHIJKLMNOP", "gsk_abcdefghijklmnopqrstuvwx"])
def test_known_key_shapes_are_masked_in_typed_text_not_in_a_models_answer(typed, key):
    assert scrub_command(["-k", key, f"--ruler-label=run with {key}"]) == ["-k", SECRET_MARK, f"--ruler-label=run with {SECRET_MARK}"]
    assert scrub(f"the answer is {key}") == f"the answer is {key}"  # guessing never changes what a model said (its score)


def test_typed_secrets_are_remembered_and_masked_wherever_they_show_up(typed):
    from pytest_ruler.parsers import parse_key_values

    options = parse_key_values([f"extra_body={NESTED}", "timeout=30", "x_api_key=sk-1"])
    assert options["extra_body"]["metadata"]["token"] == "nested-tok-8812"  # the engine still sends what was typed
    echo = "HTTP 400: unknown field metadata.token='nested-tok-8812' (api_key 'plain key 0451'); Bearer sk-1"
    assert scrub(echo) == f"HTTP 400: unknown field metadata.token='{SECRET_MARK}' (api_key '{SECRET_MARK}'); Bearer {SECRET_MARK}"
    assert scrub("timeout 30 sk-1") == "timeout 30 sk-1"  # a short one only as an echoed header, like the API key


def test_an_unknown_engine_options_value_is_never_echoed(typed):
    from pytest_ruler.engines.options import coerce_engine_options

    with pytest.raises(RulerUsageError) as err:
        coerce_engine_options("scripted", {"api_key": "not-a-known-shape-42"})
    message = str(err.value)
    assert "not-a-known-shape-42" not in message
    assert "'api_key'" in message and "known options: mode, max_context" in message


def test_a_bad_values_error_shows_it_scrubbed(typed):
    from pytest_ruler.engines.openai_options import OPTIONS
    from pytest_ruler.parsers import parse_key_values

    extra_body = next(o for o in OPTIONS if o.key == "extra_body")
    with pytest.raises(RulerUsageError) as err:  # a list where an object is needed, parsed from the command line
        extra_body.coerce([{"metadata": {"password": "pw-3141592653"}}])
    assert "pw-3141592653" not in str(err.value) and "extra_body must be a JSON object" in str(err.value)
    with pytest.raises(RulerUsageError) as err:  # a key pasted without its name
        parse_key_values(["hf_AbCdEfGhIjKlMnOpQrStUv"])
    assert "hf_AbCd" not in str(err.value) and "write KEY=VALUE" in str(err.value)


def test_the_engine_identity_and_the_command_line_share_the_rule(typed):
    from pytest_ruler import secrets
    from pytest_ruler.results import identity

    assert identity.scrubbed is secrets.scrubbed
    assert identity.scrubbed(json.loads(NESTED)) == json.loads(scrub_command([NESTED])[0])


def test_provenance_records_the_command_scrubbed(typed, tmp_path):
    from pytest_ruler.report.provenance import provenance

    argv = ["pytest", "--ruler-engine-option", f"extra_body={NESTED}", "--ruler-engine-option=hf_token=hf_AbCdEfGhIjKlMnOpQrStUv"]
    command = provenance(tmp_path, argv)["command"]
    assert command[:2] == argv[:2] and command[3] == f"--ruler-engine-option=hf_token={SECRET_MARK}"
    for secret in ("plain key 0451", "nested-tok-8812", "hf_AbCd"):
        assert secret not in json.dumps(command)
