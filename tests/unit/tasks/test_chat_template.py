"""Chat templates are outside code: a render that loops or grows without end is refused by name."""

from __future__ import annotations

import pytest

from pytest_ruler.errors import RulerUsageError
from pytest_ruler.tasks.chat import RENDER_CHARS, frame_from_template

USER = "{{ messages[0].content }}"


def test_a_normal_template_renders_to_its_frame():
    frame = frame_from_template("<|user|>" + USER + "<|assistant|>", name="chat:tiny")
    assert (frame.head, frame.tail) == ("<|user|>", "<|assistant|>")


def test_a_template_that_loops_is_refused_at_its_time_bound():
    looping = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}" + USER
    with pytest.raises(RulerUsageError) as err:
        frame_from_template(looping, name="chat:looping.jinja")
    assert "chat:looping.jinja" in err.value.fix and "did not finish rendering within 5 s" in err.value.fix


@pytest.mark.parametrize("template", [
    "{% for i in range(100000) %}{{ 'abcdefghijklmnopqrstuvwxyz' }}{% endfor %}" + USER,  # streamed, 2.6M characters
    "{{ 'x' * 100000000 }}" + USER,  # one string of 100M characters
    "{{ 10 ** 100000000 }}" + USER,  # a number of 100M digits
], ids=["streamed", "one-string", "one-number"])
def test_a_template_that_renders_a_huge_frame_is_refused_at_its_size_bound(template):
    with pytest.raises(RulerUsageError) as err:
        frame_from_template(template, name="chat:huge.jinja")
    assert "chat:huge.jinja" in err.value.fix and (f"{RENDER_CHARS:,}" in err.value.fix or "too large" in err.value.fix)
