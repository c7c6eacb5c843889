"""A misspelt task name is refused with the closest registered name ("did you mean"), as the model option does."""

from __future__ import annotations

import pytest

from pytest_ruler.cli import main
from pytest_ruler.errors import RulerUsageError
from pytest_ruler.tasks import get_task, resolve_tasks


@pytest.mark.parametrize(("typed", "meant"), [("niah_singel_1", "niah_single_1"), ("niah_multivalu", "niah_multivalue"),
                                              ("al", "all"), ("rulr2", "ruler2"), ("mk_niah_bsic", "mk_niah_basic")])
def test_a_misspelt_task_gets_did_you_mean(typed, meant):
    with pytest.raises(RulerUsageError) as exc:
        resolve_tasks(f"vt,{typed}")
    assert f"did you mean {meant!r}? choose from niah_single_1" in str(exc.value)


def test_a_name_like_no_task_gets_only_the_list():
    with pytest.raises(RulerUsageError) as exc:
        get_task("zzzz")
    assert "did you mean" not in str(exc.value) and "choose from niah_single_1" in str(exc.value)


def test_the_cli_says_did_you_mean_too(capsys):
    assert main(["generate", "--task", "niah_singel_1", "--length", "1k", "--out", "-"]) == 2
    assert "did you mean 'niah_single_1'?" in capsys.readouterr().err
