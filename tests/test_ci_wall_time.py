"""``tools/ci_wall_time.py``: the targets and the budget it reads from ``.ci/run``."""

from __future__ import annotations

from pathlib import Path

import pytest
from script_loader import load_script

ROOT = Path(__file__).resolve().parents[1]
TOOL = load_script(ROOT / "tools" / "ci_wall_time.py")


def test_the_targets_are_the_loop_then_the_background_ones():
    # .ci/run loops over the test tiers and starts `make check-extras ... &` beside them
    assert TOOL.targets() == ["test", "test-real", "test-verl", "test-verl-e2e", "test-vllm", "test-deepspeed",
                             "check-extras"]


def test_the_budget_is_the_one_ci_states():
    assert TOOL.budget() == "45 minutes on 2 cores"
    assert TOOL.budget("# Budget: 90 minutes on 4 cores (a header)") == "90 minutes on 4 cores"


def test_a_script_without_a_budget_is_refused():
    with pytest.raises(SystemExit, match="states no 'Budget"):
        TOOL.budget("# no budget here")
