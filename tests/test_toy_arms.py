"""The embedded world's arms: each a configuration of the one trainer, with the rollouts docs/method.md states."""

from __future__ import annotations

import pytest

from tagrpo.demo.arms import ARMS, arm_settings
from tagrpo.demo.config import DEMO_ARMS, DemoConfig

N, G, S, Q, B = 3, 4, 100, 128, 8  # the default preset


def rollouts(s: dict) -> int:
    return s["max_steps"] * B * (s["num_rephrasings"] + 1) * s["num_generations"]


def test_every_arm_at_the_default_preset():
    got = {name: arm_settings(name, N, G, S, Q) for name in ARMS}
    # GRPO: 100 steps x 8 questions x G=4 = 3,200 rollouts; TA-GRPO and its ablations (N+1)=4 times that.
    assert {k: rollouts(v) for k, v in got.items()} == {
        "grpo": 3200,
        "grpo_long": 12800,  # (N+1) x the steps
        "equal_sampling": 12800,  # (N+1)G = 16 samples of q0
        "grpo_more_data": 8000,  # 2.5 x the questions and the steps: same epochs
        "augmentation": 12800,
        "pooled_no_anchor": 12800,
        "ta_grpo": 12800,
        "ta_grpo_behavior": 12800,
        "ta_grpo_control": 12800,
        "ta_grpo_adaptive": 12800,  # at most: the rephrasings of questions whose q0 group is mixed are skipped
        "ta_grpo_history": 12800,  # at most, likewise from each question's previous visit
        "ta_grpo_gated": 12800,  # every pool is sampled; only where q0 is all wrong do its rephrasings count
        "ta_grpo_w25": 12800,
        "ta_grpo_w50": 12800,
        "ta_grpo_kl": 12800,
        "ta_grpo_variant": 12800,
    }
    modes = {k: (v["num_rephrasings"], v["advantage_scope"], v["anchor"], v["plan"]) for k, v in got.items()}
    assert modes["augmentation"] == (3, "variant", "none", "main")  # MathForge-style: independent prompts
    assert modes["pooled_no_anchor"] == (3, "pool", "none", "main")
    assert modes["ta_grpo"] == (3, "pool", "original", "main")
    assert modes["ta_grpo_control"] == (3, "pool", "original", "control")
    assert modes["ta_grpo_behavior"] == (3, "pool", "behavior", "main")  # the ratio's old policy on q_n
    assert got["ta_grpo_adaptive"]["pool_mode"] == "adaptive" and got["ta_grpo"]["pool_mode"] == "full"
    assert got["ta_grpo_history"]["pool_mode"] == "history"
    assert modes["ta_grpo_variant"] == (3, "variant", "original", "main")  # the issue-32 pilot: anchored, per variant
    assert got["ta_grpo_gated"]["pool_gate"] == "q0_all_wrong" and got["ta_grpo"]["pool_gate"] == "none"
    assert [got[k]["rephrased_weight"] for k in ("ta_grpo", "ta_grpo_w25", "ta_grpo_w50")] == [1.0, 0.25, 0.5]
    assert got["ta_grpo_kl"]["beta"] == 0.001 and all(v["beta"] == 0.0 for k, v in got.items() if k != "ta_grpo_kl")
    assert all(modes[k][0] == 0 for k in ("grpo", "grpo_long", "equal_sampling", "grpo_more_data"))
    assert got["grpo_more_data"]["train_questions"] == 320 and got["grpo"]["train_questions"] == 128
    assert got["grpo_long"]["max_steps"] == 400 and got["equal_sampling"]["num_generations"] == 16


@pytest.mark.parametrize("name", list(ARMS))
def test_every_arm_is_a_valid_trainer_config(name, tmp_path):
    from tagrpo.trainer.config import TAGRPOConfig
    from tagrpo.trainer.run import trainer_class

    s = arm_settings(name, N, G, S, Q)
    pool = (s["num_rephrasings"] + 1) * s["num_generations"]
    cfg = TAGRPOConfig(output_dir=str(tmp_path), num_rephrasings=s["num_rephrasings"],
                       num_generations=s["num_generations"], advantage_scope=s["advantage_scope"],
                       anchor=s["anchor"], pool_mode=s["pool_mode"], pool_gate=s["pool_gate"],
                       rephrased_weight=s["rephrased_weight"], beta=s["beta"], per_device_train_batch_size=B * pool,
                       use_cpu=True, report_to=[])
    assert cfg.pool_size == pool and cfg.generation_batch_size == B * pool
    adaptive = name in ("ta_grpo_adaptive", "ta_grpo_history")  # the opt-in subclass trains them
    assert trainer_class(cfg).__name__ == ("AdaptiveTAGRPOTrainer" if adaptive else "TAGRPOTrainer")


def test_demo_config_validates_arms_and_presets():
    assert DemoConfig().preset == "regime"  # what make demo runs
    assert DemoConfig(preset="default").arm_list == list(DEMO_ARMS)
    assert DemoConfig(preset="quick").rl_steps == 6 and DemoConfig(preset="default").rl_steps == S
    with pytest.raises(ValueError, match="'grpo', 'grpo_long'"):
        DemoConfig(arms="grpo,ta_grpo_v2")
    with pytest.raises(ValueError, match="'quick', 'default'"):
        DemoConfig(preset="huge")


def test_every_arm_has_a_plot_style():
    # make demo plots every arm it trains (a missing style crashed the regime demo once its arms grew)
    from tagrpo.demo.arms import ARMS
    from tagrpo.demo.report import STYLE

    assert set(ARMS) <= set(STYLE)
    assert len({STYLE[a] for a in ARMS}) == len(ARMS)  # no two arms drawn alike
