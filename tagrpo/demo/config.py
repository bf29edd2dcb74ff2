"""``tagrpo demo``: the arms of ``tagrpo.demo.arms`` from one pretrained base, on an embedded world.

``--world regime`` (the default preset's world) is ``tagrpo.toy.regime``, where ``--hard-share`` of the questions
carry a tens word the base has never read (``tagrpo.toy.worlds``); ``--world basic`` (presets ``default`` and
``quick``) is ``tagrpo.toy.world`` with its shipped base. ``--num-iterations 2`` takes two optimizer steps per
generation batch at the same rollouts, so that the importance ratio and the clip act; the report adds the hard
subset (held-out questions whose base samples on q0 were all wrong) beside the rest.

Every arm trains with the same ``run_train`` (TAGRPOTrainer, math reward) that ``tagrpo train`` uses on a real
model, with the same learning rate, questions per step, completion length and seed; what differs is the arm's
configuration and so the rollouts spent, which every table and plot states. A seed fixes the training questions,
the held-out questions, the RL sampling and the evaluation sampling, so two arms of one seed are paired.

Evaluation is on held-out q0 prompts (spelled-out narratives of number triples never seen in pretraining or
training): pass@k for k = 1..``eval_samples`` (unbiased), the per-question correct counts (for intervals) and the
lexical diversity of the responses. The base model is also scored on every surface form of the same held-out
problems, which is the premise of the method: q0's form is hard, some rephrased forms are easy.

This module holds the configuration and loads no torch (``tagrpo demo --help`` is quick); the training and
evaluation live in :mod:`tagrpo.demo.run`.
"""

from __future__ import annotations

from dataclasses import dataclass

from tagrpo.common.fields import helped
from tagrpo.common.modes import check_mode
from tagrpo.demo.arms import ARMS, RECOMMENDED, arm_settings
from tagrpo.toy.worlds import MAX_COMPLETION, WORLDS, question_rows

DEMO_ARMS = ("grpo", "augmentation", "equal_sampling", "ta_grpo")
REGIME_LEARNING_RATES = (  # each arm's best on validation problems at hard_share 0.9: studies/results/toy_regime_v2.md,
    # "sweep" (per knob); the arms study v2 did not sweep keep the first study's (toy_regime.md, swept at 0.6)
    "grpo=3e-5,grpo_long=1e-5,equal_sampling=3e-5,ta_grpo=1e-4,ta_grpo_control=1e-5,ta_grpo_gated=1e-4,"
    "ta_grpo_w25=3e-4,ta_grpo_w50=1e-4,ta_grpo_kl=1e-4,ta_grpo_adaptive=1e-4,ta_grpo_behavior=3e-5,"
    "pooled_no_anchor=3e-5,ta_grpo_history=1e-4"
)
PRESETS = {
    "quick": dict(
        rl_steps=6, train_questions=16, questions_per_step=4, eval_questions=32, eval_samples=8, checkpoints=2,
        num_iterations=1, learning_rates="", world="basic", hard_share=0.6, arms=",".join(DEMO_ARMS),
    ),
    "default": dict(
        rl_steps=100, train_questions=128, questions_per_step=8, eval_questions=128, eval_samples=16, checkpoints=4,
        num_iterations=1, learning_rates="", world="basic", hard_share=0.6, arms=",".join(DEMO_ARMS),
    ),
    "regime": dict(
        rl_steps=12, train_questions=64, questions_per_step=8, eval_questions=64, eval_samples=64, checkpoints=1,
        num_iterations=2, learning_rates=REGIME_LEARNING_RATES, world="regime", hard_share=0.9,
        arms=f"grpo,equal_sampling,ta_grpo,ta_grpo_control,{RECOMMENDED}",
    ),
}
CURVE_QUESTIONS, CURVE_SAMPLES = 64, 8
PREMISE_QUESTIONS, PREMISE_SAMPLES = 64, 8
STEP_KEYS = (
    "step",
    "reward",
    "completions/mean_length",
    "tagrpo/rollouts",
    "tagrpo/original/all_zero",
    "tagrpo/original/all_one",
    "tagrpo/original/zero_std",
    "tagrpo/pool/all_zero",
    "tagrpo/pool/all_one",
    "tagrpo/pool/zero_std",
    "tagrpo/variant/zero_std",
    "tagrpo/rescued",
    "tagrpo/expanded",
    "tagrpo/rescued/from_zero",
    "tagrpo/rescued/from_one",
    "tagrpo/reference/rescued/from_zero",
    "tagrpo/reference/rescued/from_one",
)


@dataclass
class DemoConfig:
    """Settings of ``tagrpo demo``. Fields left at None take the preset's value."""

    output_dir: str = helped("outputs/demo", "where metrics.json, report.md, the plots and the runs go")
    base_dir: str | None = helped(None, "the base model (default: the world's shipped checkpoint, "
                                  "tagrpo/toy/regime_checkpoint or tagrpo/toy/checkpoint)")
    world: str | None = helped(None, f"embedded world: {' or '.join(WORLDS)} (default: the preset's)")
    hard_share: float | None = helped(None, "regime world: share of questions with a tens word the base never read")
    preset: str = helped(
        "regime", "regime (the default; make demo, a few minutes: the regime world at hard_share 0.9, learning "
        "rates from studies/results/toy_regime_v2.md's validation sweep), default (the basic world's five-seed "
        "benchmark) or quick (a smoke test)"
    )
    seed: int = helped(0, "fixes the training and held-out questions and all sampling; arms of a seed are paired")
    arms: str | None = helped(None, f"comma-separated arms of tagrpo.demo.arms: {', '.join(ARMS)}")
    rl_steps: int | None = helped(None, "GRPO's optimizer steps (default: the preset's)")
    train_questions: int | None = helped(None, "questions to train on (default: the preset's)")
    questions_per_step: int | None = helped(None, "questions per step (default: the preset's)")
    eval_questions: int | None = helped(None, "held-out questions (default: the preset's)")
    eval_samples: int | None = helped(None, "samples per held-out question, the largest k (default: the preset's)")
    checkpoints: int | None = helped(None, "held-out measurements during training, 0: none (default: the preset's)")
    num_rephrasings: int = helped(3, "N, rephrasings per question")
    num_generations: int = helped(4, "G, samples per prompt")
    learning_rate: float = helped(3e-5, "the learning rate of every arm not in --learning-rates")
    learning_rates: str | None = helped(None, "per-arm learning rates, arm=lr,arm=lr (default: the preset's)")
    num_iterations: int | None = helped(None, "optimizer steps per generation batch (2+: the ratio and clip act)")
    held_out_split: str = helped("test", "problems of the held-out questions: test, or validation (for tuning)")
    max_completion_length: int | None = helped(None, "tokens per completion (default: 28 basic, 36 regime)")

    def __post_init__(self):
        check_mode("preset", self.preset, tuple(PRESETS))
        for key, value in PRESETS[self.preset].items():
            if getattr(self, key) is None:
                setattr(self, key, value)
        check_mode("world", self.world, WORLDS)
        if self.max_completion_length is None:
            self.max_completion_length = MAX_COMPLETION[self.world]
        check_mode("held_out_split", self.held_out_split, ("test", "validation"))
        for name in self.arm_list:
            check_mode("arm", name, tuple(ARMS))
        self.lr_of = {}  # arm: learning rate, from --learning-rates
        for item in filter(None, (x.strip() for x in self.learning_rates.split(","))):
            arm, _, value = item.partition("=")
            try:
                lr = float(value)
            except ValueError:
                raise ValueError(f"learning_rates: {item!r} is not arm=number") from None
            self.lr_of[check_mode("arm", arm.strip(), tuple(ARMS))] = lr

    @property
    def arm_list(self) -> list[str]:
        return [m.strip() for m in self.arms.split(",") if m.strip()]

    def learning_rate_of(self, arm: str) -> float:
        return self.lr_of.get(arm, self.learning_rate)

    def settings(self, arm: str) -> dict:
        return arm_settings(arm, self.num_rephrasings, self.num_generations, self.rl_steps, self.train_questions)


def held_out_rows(cfg: DemoConfig) -> list[dict]:
    """The held-out q0 questions of ``cfg``'s seed, from its ``held_out_split``."""
    return question_rows(
        cfg.world, cfg.eval_questions, 2000 + cfg.seed, 0, split=cfg.held_out_split, hard_share=cfg.hard_share
    )


def run_demo(cfg: DemoConfig, console=None) -> dict:
    """Train every arm of ``cfg`` from the base, evaluate, write metrics.json, report.md and the plots
    (``demo_run.run_demo``)."""
    from tagrpo.demo import run as demo_run

    return demo_run.run_demo(cfg, console)
