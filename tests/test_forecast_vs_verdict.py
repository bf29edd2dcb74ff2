"""``studies/forecast_vs_verdict.py``: the committed table is what the script makes of the shipped map; the
leave-one-out placement and the reading of a conclusion, by hand on a small map."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from script_loader import load_script

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def table():
    return load_script(ROOT / "studies" / "forecast_vs_verdict.py")


def test_the_committed_table_is_rebuilt_from_the_shipped_map(table):
    committed = json.loads((ROOT / "studies" / "results" / "forecast_vs_verdict.json").read_text(encoding="utf-8"))
    assert json.loads(json.dumps(table.build())) == committed, "run .venv/bin/python studies/forecast_vs_verdict.py"
    assert (ROOT / "studies" / "results" / "forecast_vs_verdict.md").read_text(encoding="utf-8") == \
        table.markdown(committed)


def test_a_conclusion_is_read_as_the_direction_it_expects(table):
    assert table.expected("Cannot tell whether TA-GRPO beats ...") == "cannot tell"
    assert table.expected("Expect TA-GRPO to lower pass@1 but raise pass@64 compared with ...") == "lowered"
    assert table.expected("Expect TA-GRPO to make no clear difference to pass@1 compared ...") == "no difference"
    with pytest.raises(ValueError, match="cannot read"):
        table.expected("TA-GRPO will win")


def _point(share: float, shift: float | None, mean: float, p_holm: float, world: str = "real") -> dict:
    return {"world": world, "source": "studies/results/x.json", "model": "m", "task": "t", "regime": "r",
            "hard_share": share, "toy_base": "toy_regime", "seeds": 10,
            "measured": {"q0_all_wrong": {"mean": share}, "mean_shift": None if shift is None else {"mean": shift},
                         "probe_n": 8},
            "contrasts": [{"subset": "all", "k": 1, "mean": mean, "lo": mean - 0.01, "hi": mean + 0.01,
                           "p_holm": p_holm}]}


def test_leave_one_out_places_a_point_on_the_others_only(table):
    a, b, c = _point(0.50, 0.20, 0.10, 0.001), _point(0.55, 0.25, -0.05, 0.01), _point(0.90, 0.20, 0.0, 0.5)
    regime = {"points": [a, b, c]}
    # a's nearest other is b: 5 pp on the share and 5 on the shift, both inside the 10 pp gaps; b lowered pass@1
    assert table.leave_one_out(a, regime)["expects"] == "lowered"
    assert table.leave_one_out(b, regime)["expects"] == "raised"  # b's nearest other is a
    # c's nearest other is 35 pp away on the share: the rule cannot tell
    assert table.leave_one_out(c, regime)["expects"] == "cannot tell"
    assert table.agreement("lowered", "raised") == "misses" and table.agreement("cannot tell", "raised") == \
        "no forecast" and table.agreement("raised", "raised") == "agrees"


def test_a_point_without_a_shift_is_placed_on_the_share_alone(table):
    made = _point(0.30, None, 0.0, 0.9)
    # 40 pp apart on the shift, 5 on the share: near on the share alone
    regime = {"points": [made, _point(0.35, 0.40, -0.08, 0.002)]}
    assert table.leave_one_out(made, regime)["expects"] == "lowered"
