"""The thinking options end to end in the core: --ruler-think-budget, --ruler-chat-template-kwargs,
--ruler-think-start/--ruler-think-end (typed once, refused with the fix), the chat template's
kwargs in the frame, the cache keeping a server's reasoning, and the scripted thinking stand-in."""

from __future__ import annotations

import sqlite3

import pytest

from pytest_ruler.engines.base import Completion, EngineConfig, GenerationRequest
from pytest_ruler.errors import RulerUsageError
from pytest_ruler.options import option_dest
from pytest_ruler.plugin.config import build_config
from pytest_ruler.run.cache import PredictionCache
from pytest_ruler.tasks.chat import frame_from_template

# a Qwen3-like template (written for this test): thinking on by default, off with enable_thinking=false
TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
            "{% if add_generation_prompt %}<|im_start|>assistant\n"
            "{% if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n{% endif %}{% endif %}")


class FakeConfig:
    def __init__(self, argv=None, ini=None):
        self.argv = {option_dest(k): v for k, v in (argv or {}).items()}
        self.ini = {option_dest(k): v for k, v in (ini or {}).items()}

    def getoption(self, dest):
        return self.argv.get(dest)

    def getini(self, dest):
        return self.ini.get(dest, [] if dest == "ruler_task_thresholds" else None)


def config(argv=None, ini=None):
    return build_config(FakeConfig({"model": "smollm2-135m", "backend": "scripted", **(argv or {})}, ini))


def test_defaults_and_typed_values():
    c = config()
    assert (c.think_budget, dict(c.chat_template_kwargs), c.think_start, c.think_end) == (None, {}, "<think>", "</think>")
    c = config({"think-budget": "512", "chat-template-kwargs": ["enable_thinking=false", "reasoning_effort=low"]})
    assert c.think_budget == 512 and c.chat_template_kwargs == {"enable_thinking": False, "reasoning_effort": "low"}
    assert config(ini={"chat-template-kwargs": "enable_thinking=true"}).chat_template_kwargs == {"enable_thinking": True}


@pytest.mark.parametrize("argv, ini, parameter", [
    ({"think-budget": "0"}, {}, "--ruler-think-budget"),
    ({"think-budget": "lots"}, {}, "--ruler-think-budget"),
    ({}, {"think-budget": "-5"}, "ruler_think_budget"),
    ({"chat-template-kwargs": ["enable_thinking"]}, {}, "--ruler-chat-template-kwargs"),
    ({"chat-template-kwargs": ["messages=[]"]}, {}, "--ruler-chat-template-kwargs"),
    ({"chat-template-kwargs": ["enable_thinking=false"], "chat-template": "none"}, {}, "--ruler-chat-template-kwargs"),
    ({"think-end": " "}, {}, "--ruler-think-end"),
    ({"think-start": "<t>", "think-end": "<t>"}, {}, "--ruler-think-end"),
])
def test_a_bad_value_names_the_parameter_the_value_and_the_fix(argv, ini, parameter):
    with pytest.raises(RulerUsageError) as err:
        config(argv, ini)
    assert err.value.parameter == parameter and err.value.fix


def test_template_kwargs_reach_the_frame():
    on = frame_from_template(TEMPLATE)
    off = frame_from_template(TEMPLATE, kwargs={"enable_thinking": False})
    assert on.tail == "<|im_end|>\n<|im_start|>assistant\n"
    assert off.tail == "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"


def test_the_cache_keeps_a_servers_reasoning_and_opens_an_older_file(tmp_path):
    old = tmp_path / "old"
    old.mkdir()
    conn = sqlite3.connect(old / "predictions.sqlite")  # the table as written before thinking models
    conn.execute("CREATE TABLE completions (key TEXT PRIMARY KEY, text TEXT NOT NULL, prompt_tokens INTEGER NOT NULL, "
                 "completion_tokens INTEGER NOT NULL, finish_reason TEXT NOT NULL, seconds REAL NOT NULL, created REAL NOT NULL)")
    conn.execute("INSERT INTO completions VALUES ('k0', ' 1.', 3, 2, 'stop', 0.1, 0)")
    conn.commit()
    conn.close()
    cache = PredictionCache(old)
    assert cache.get_many(["k0"])["k0"] == Completion(" 1.", 3, 2, "stop", 0.1)
    cache.put("k1", Completion(" 42", 3, 9, "stop", 0.1, reasoning="it is 42"))
    cache.put("k2", Completion("<think>a</think> 7", 3, 9, "stop", 0.1))
    cache.close()
    again = PredictionCache(old).get_many(["k1", "k2"])
    assert again["k1"].reasoning == "it is 42" and again["k1"].text == " 42"
    assert again["k2"].reasoning is None


def _scripted(**options):
    from pytest_ruler.engines.scripted import ScriptedEngine

    return ScriptedEngine(EngineConfig(model="x", backend="scripted", options={"mode": "thinking", **options}))


def test_the_scripted_thinking_stand_in_thinks_then_answers():
    eng = _scripted(think_tokens=60)
    assert eng.identity()["engine"] == "scripted (test engine, not a model)" and eng.identity()["think_tokens"] == 60
    prompt = ("One of the special magic numbers for alpha is: 1234567.\n"
              "What is it? The special magic numbers for alpha mentioned in the provided text are")
    ids = tuple(eng.tokenizer.encode(prompt))
    [long, short] = eng.generate([GenerationRequest(prompt, ids, 200), GenerationRequest(prompt, ids, 20)])
    assert long.finish_reason == "stop" and long.text.startswith("<think>") and long.text.endswith("</think>\n\n1234567.")
    assert 55 <= long.completion_tokens - len(eng.tokenizer.encode("1234567.")) <= 70
    assert short.finish_reason == "length" and short.completion_tokens == 20 and "</think>" not in short.text
    forced = prompt.replace(" The special", "<think>x</think>\n\n The special")
    [answer] = eng.generate([GenerationRequest(forced, tuple(eng.tokenizer.encode(forced)), 20)])
    assert answer.text == " 1234567." and answer.finish_reason == "stop"
