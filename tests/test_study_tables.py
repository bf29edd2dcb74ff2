"""Parts of the regime study's report on hand-made cells (``tagrpo.experiments.plots``, ``tables``): the map of every
arm, and the rescue columns of the every-arm table with the trainer's reference split they read."""

from __future__ import annotations

import pytest
import torch

from tagrpo.core import group_diagnostics
from tagrpo.experiments import plots, tables
from tagrpo.experiments.declarations import capacity, embedded_v2
from tagrpo.experiments.render import arm_order


def _cell(arm, knob, seed, counts, samples=4):
    spec = {"kind": "arm", "arm": arm, "knob": knob, "seed": seed, "learning_rate": 1e-5}
    return {"spec": spec, "counts": counts, "samples": samples}


def test_the_report_orders_every_declared_arm():
    order = arm_order(embedded_v2.STUDY)
    assert order == ("ta_grpo", "equal_sampling", "grpo_long", "ta_grpo_control", "ta_grpo_gated", "weighted",
                     "ta_grpo_w25", "ta_grpo_w50", "ta_grpo_kl", "ta_grpo_adaptive", "ta_grpo_variant@3e-05",
                     "ta_grpo_variant@0.0001")
    assert set(order) == set(embedded_v2.STUDY.all_arms()) | {"ta_grpo_w25", "ta_grpo_w50"}
    assert arm_order(capacity.STUDY) == (*capacity.ARMS, "ta_grpo_w25", "ta_grpo_w50")


def test_arm_points_and_the_map_draw_every_declared_arm_in_its_own_colour(tmp_path, monkeypatch):
    import matplotlib.axes

    # questions 0-1 hard (base 0 of 4), 2-3 the rest; equal-sampling rest 4/4 and 2/4 on both seeds (pass@1 0.75),
    # hard 0; TA-GRPO rest 2/4 (0.5), hard pass@4 on question 0 only (1 of 2 hard questions: 0.5)
    order = arm_order(embedded_v2.STUDY)
    bases = {(0.6, s): {"counts": [0, 0, 2, 2], "samples": 4} for s in range(2)}
    runs = {(0.6, s, arm): _cell(arm, 0.6, s, [1, 0, 2, 2]) for s in range(2) for arm in order}
    for s in range(2):
        runs[(0.6, s, "equal_sampling")] = _cell("equal_sampling", 0.6, s, [0, 0, 4, 2])
    runs[(0.9, 0, "ta_grpo")] = _cell("ta_grpo", 0.9, 0, [4, 4, 4, 4])  # no base cell at 0.9: not drawn
    points = plots.arm_points(runs, bases, 0.6, 4, order)
    assert list(points) == list(order)  # the declared order
    (rest, hard) = points["equal_sampling"]
    assert rest["mean"] == 0.75 and rest["n"] == 2 and hard["mean"] == 0.0
    (rest, hard) = points["ta_grpo"]
    assert rest["mean"] == 0.5 and hard["mean"] == 0.5
    assert plots.arm_points(runs, bases, 0.9, 4, order)["ta_grpo"][0]["n"] == 0
    colours = []
    drawn = matplotlib.axes.Axes.errorbar
    monkeypatch.setattr(matplotlib.axes.Axes, "errorbar",
                        lambda self, *a, **kw: colours.append(kw["color"]) or drawn(self, *a, **kw))
    plots.plot_map(runs, bases, 4, str(tmp_path / "map.png"), "every arm", embedded_v2.STUDY.settings, order)
    assert len(colours) == len(order) - 1  # "weighted" is the chosen lambda arm, drawn under its own name
    assert len(set(colours)) == len(colours)
    assert (tmp_path / "map.png").stat().st_size > 10_000


def test_a_panel_with_a_base_and_no_arm_says_so_and_draws_no_empty_legend(tmp_path, monkeypatch):
    import warnings

    import matplotlib.axes

    texts = []
    said = matplotlib.axes.Axes.text
    monkeypatch.setattr(matplotlib.axes.Axes, "text", lambda self, *a, **kw: texts.append(a[2]) or said(self, *a, **kw))
    bases = {(0.6, 0): {"counts": [0, 0, 2, 2], "samples": 4}}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib warns on a legend with nothing to show
        plots.plot_map({}, bases, 4, str(tmp_path / "map.png"), "a base only", (0.6,), ("ta_grpo",))
    assert texts == ["no arm's cells yet"]
    assert (tmp_path / "map.png").exists()


def test_the_map_of_no_base_cells_draws_nothing(tmp_path):
    plots.plot_map({}, {}, 4, str(tmp_path / "map.png"), "nothing", (0.6,), ("ta_grpo",))
    assert not (tmp_path / "map.png").exists()


def test_reference_rescue_split_by_hand():
    # equal-sampling's first K=4 samples of q0 as the "group", all 8 as the "pool": the rescue split by sample size
    rewards = torch.tensor([[0, 0, 0, 0, 1, 0, 0, 0], [1, 1, 1, 1, 1, 1, 1, 0], [1, 1, 1, 1, 1, 1, 1, 1],
                            [0, 1, 0, 0, 0, 0, 0, 0]], dtype=torch.float)  # (B, G)
    diag = group_diagnostics(rewards.view(4, 2, 4))  # (B, G/K, K)
    assert diag["rescued/from_zero"] == 0.25 and diag["rescued/from_one"] == 0.25 and diag["rescued"] == 0.5


def test_reference_group_size_is_checked():
    from tagrpo.trainer.config import TAGRPOConfig

    with pytest.raises(ValueError, match="reference_group_size"):
        TAGRPOConfig(output_dir="/tmp/x", num_rephrasings=0, num_generations=6, reference_group_size=4,
                     per_device_train_batch_size=6, use_cpu=True, report_to=[])
    with pytest.raises(ValueError, match="num_rephrasings=0"):
        TAGRPOConfig(output_dir="/tmp/x", num_rephrasings=3, num_generations=4, reference_group_size=4,
                     per_device_train_batch_size=16, use_cpu=True, report_to=[])


def test_the_rescue_columns_read_the_reference_split_where_there_is_one():
    pooled = {"steps": [{"tagrpo/rescued/from_zero": 0.5, "tagrpo/rescued/from_one": 0.0},
                        {"tagrpo/rescued/from_zero": 0.25, "tagrpo/rescued/from_one": 0.5}]}
    assert tables.rescue_share(pooled, "zero") == 0.375 and tables.rescue_share(pooled, "one") == 0.25
    equal = {"steps": [{**s, "tagrpo/reference/rescued/from_zero": 0.1} for s in pooled["steps"]]}
    assert tables.rescue_share(equal, "zero") == pytest.approx(0.1)  # equal-sampling: its first G, not its pool


def test_the_seed_table_lists_each_primary_arm_seed_by_seed_and_marks_missing_cells():
    import dataclasses

    from tagrpo.experiments.declarations import real_v3
    from tagrpo.experiments.study import Contrast

    study = dataclasses.replace(real_v3.STUDY, settings=("reasoning",), seeds=(0, 1),
                                primary=(Contrast("ta_grpo", "equal_sampling", 1, setting="reasoning"),))
    bases = {("reasoning", 0): {"pass_at_k": {"1": 0.155}}, ("reasoning", 1): {"pass_at_k": {"1": 0.175}}}
    runs = {("reasoning", 0, "ta_grpo"): {"pass_at_k": {"1": 0.465}, "completion_tokens": 36_469},
            ("reasoning", 0, "equal_sampling"): {"pass_at_k": {"1": 0.11}, "completion_tokens": 32_757},
            ("reasoning", 1, "equal_sampling"): {"pass_at_k": {"1": 0.92}, "completion_tokens": 59_349}}
    lines = tables.seed_table(study, runs, bases).splitlines()
    assert lines[0] == "| regime | arm | seed 0 | seed 1 |"
    assert lines[2:] == ["| reasoning | base model | 15.5 | 17.5 |",
                         "| reasoning | TA-GRPO | 46.5 (36k) | - |",
                         "| reasoning | equal-sampling GRPO | 11.0 (33k) | 92.0 (59k) |"]
    assert tables.seed_table(study, {}, {}) == ""  # no cells yet: no table
