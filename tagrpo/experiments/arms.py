"""The arms of the embedded-world comparison: each one a configuration of the one ``TAGRPOTrainer``.

The demo and ``benchmarks/toy_reproduction.py`` read their arms from ``ARMS`` and turn one into trainer settings
with ``arm_settings``, so both compare the same things. With N rephrasings, G samples per prompt, S steps and Q
training questions (B questions per step), an arm spends ``steps * B * samples`` rollouts:

| arm | rephrasings | samples per question | steps | questions |
|---|---|---|---|---|
| ``grpo`` | none | G | S | Q |
| ``grpo_long`` | none | G | (N+1)·S | Q |
| ``equal_sampling`` | none | (N+1)·G of q0 | S | Q |
| ``grpo_more_data`` | none | G | 2.5·S | 2.5·Q |
| ``augmentation`` | main, each variant its own group, conditioned on itself | (N+1)·G | S | Q |
| ``pooled_no_anchor`` | main, pooled, conditioned on the generating prompt | (N+1)·G | S | Q |
| ``ta_grpo`` | main, pooled, anchored on q0 | (N+1)·G | S | Q |
| ``ta_grpo_behavior`` | main, pooled, anchored on q0, old log-probs on the generating prompt | (N+1)·G | S | Q |
| ``ta_grpo_control`` | control (renaming only), pooled, anchored on q0 | (N+1)·G | S | Q |
| ``ta_grpo_adaptive`` | main, only for questions whose G samples of q0 are uniform | G to (N+1)·G | S | Q |
| ``ta_grpo_history`` | main, only for questions whose q0 group was uniform at their last visit | G to (N+1)·G | S | Q |

``grpo_long`` spends TA-GRPO's rollouts by training longer (the compute-matched baseline), ``grpo_more_data``
trains as many epochs as GRPO on 2.5 times as many questions (the paper's data-efficiency comparison).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tagrpo.common.modes import check_mode


@dataclass(frozen=True)
class Arm:
    label: str
    plan: str | None = None  # rephrasing plan of tagrpo.toy.world.PLANS; None: no rephrasings (N=0)
    advantage_scope: str = "pool"
    anchor: str = "original"
    wide: bool = False  # (N+1)*G samples of q0 per question instead of G
    long: bool = False  # (N+1) times the preset's steps
    data_factor: float = 1.0  # multiple of the preset's training questions (and steps, to keep the epochs)
    pool_mode: str = "full"  # TAGRPOConfig.pool_mode


ARMS = {
    "grpo": Arm("GRPO"),
    "grpo_long": Arm("GRPO-long", long=True),
    "equal_sampling": Arm("equal-sampling GRPO", wide=True),
    "grpo_more_data": Arm("GRPO, 2.5x questions", data_factor=2.5),
    "augmentation": Arm("augmentation only", plan="main", advantage_scope="variant", anchor="none"),
    "pooled_no_anchor": Arm("pooled, no anchoring", plan="main", anchor="none"),
    "ta_grpo": Arm("TA-GRPO", plan="main"),
    "ta_grpo_behavior": Arm("TA-GRPO, behavior anchor", plan="main", anchor="behavior"),
    "ta_grpo_control": Arm("TA-GRPO, renaming-only", plan="control"),
    "ta_grpo_adaptive": Arm("TA-GRPO, adaptive in-step", plan="main", pool_mode="adaptive"),
    "ta_grpo_history": Arm("TA-GRPO, adaptive from history", plan="main", pool_mode="history"),
}
OURS = ("ta_grpo_behavior", "ta_grpo_adaptive", "ta_grpo_history")  # not in the paper
PAPER_ARMS = tuple(a for a in ARMS if a not in OURS)


def arm_settings(name: str, num_rephrasings: int, num_generations: int, steps: int, questions: int) -> dict:
    """Trainer-level settings of arm ``name`` for a preset of N, G, S steps and Q training questions.

    Returns ``num_rephrasings``, ``num_generations`` (samples per prompt variant), ``max_steps``,
    ``train_questions``, ``advantage_scope``, ``anchor``, ``pool_mode`` and ``plan`` (the rephrasing plan;
    ``main`` when the arm uses none, so that its rows are the same questions).
    """
    arm = ARMS[check_mode("arm", name, tuple(ARMS))]
    n = num_rephrasings if arm.plan else 0
    g = num_generations * (num_rephrasings + 1 if arm.wide else 1)
    factor = (num_rephrasings + 1 if arm.long else 1) * arm.data_factor
    return {
        "num_rephrasings": n,
        "num_generations": g,
        "max_steps": math.ceil(steps * factor),
        "train_questions": math.ceil(questions * arm.data_factor),
        "advantage_scope": arm.advantage_scope,
        "anchor": arm.anchor,
        "pool_mode": arm.pool_mode,
        "plan": arm.plan or "main",
    }
