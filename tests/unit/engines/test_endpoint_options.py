"""--ruler-base-url given several times and --ruler-max-concurrency, read by build_config."""

from __future__ import annotations

import pytest

from pytest_ruler.errors import RulerUsageError
from pytest_ruler.run_config import RulerConfig

from ..test_options import config

A, B = "http://10.0.0.1:8000/v1", "http://10.0.0.2:8000/v1"


def test_one_base_url_stays_a_string_several_are_a_tuple_in_order():
    assert config({"backend": "openai", "base-url": [A]}).base_url == A
    assert config({"backend": "openai", "base-url": [B, A]}).base_url == (B, A)
    assert config(ini={"backend": "openai", "base-url": f"\n{A}\n{B}\n"}).base_url == (A, B)  # ini: one per line
    assert RulerConfig(model="m").base_url is None


def test_the_same_base_url_twice_is_refused_naming_it_and_hiding_its_query():
    with pytest.raises(RulerUsageError) as err:
        config({"backend": "openai", "base-url": [A, A + "/"]})
    assert err.value.parameter == "--ruler-base-url" and "given twice" in err.value.fix
    with pytest.raises(RulerUsageError) as err:
        config(ini={"backend": "openai", "base-url": f"{A}?key=sk-hidden-1\n{A}?key=sk-hidden-1"})
    assert err.value.parameter == "ruler_base_url" and "sk-hidden" not in str(err.value)


def test_max_concurrency_is_the_openai_engines_concurrency_per_endpoint():
    c = config({"backend": "openai", "base-url": [A, B], "max-concurrency": "3"})
    assert c.engine_options["concurrency"] == 3
    with pytest.raises(RulerUsageError) as err:
        config({"backend": "openai", "base-url": [A], "max-concurrency": "0"})
    assert err.value.parameter == "--ruler-max-concurrency" and ">= 1" in err.value.fix
