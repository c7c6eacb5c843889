"""Secrets never reach reports: the recorded command line and the per-sample predictions."""

from __future__ import annotations

from pytest_ruler.run.runner import _Ref, prediction_records
from pytest_ruler.secrets import SECRET_MARK, scrub_command


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
