"""A study is a declaration (``Study``): its task, arms, settings, sweep, seeds and contrasts, fixed in code before
any of its cells run. One cell runner (``tagrpo.experiments.cells``), one phase runner (``tagrpo.experiments.run``),
one verdict engine (``tagrpo.experiments.judge``) and one renderer (``tagrpo.experiments.render``) serve every
declaration; a declaration lives in ``tagrpo/experiments/declarations/`` and its entry point in ``studies/`` is a line
that names it.

Vocabulary:

- a *setting* is one value of the study's knob (the embedded world's share of hard questions, ``hard_share``; the
  third real study's regime), or ``None`` for a study with one setting and no knob (the second real study); a cell
  that serves several settings alike (an arm without rephrasings, in regimes that share q0 and the questions) is
  computed once and filed under each (its spec's ``knobs``);
- a *cell* is the base model's evaluation, or one arm trained at one setting, seed and learning rate;
- *hard* questions are the test questions the same seed's base model got none of its samples right on q0, the
  *rest* the others (``judge.subset_pass``);
- a contrast is judged on the paired per-seed differences ``arm - ref`` (same setting and seed) over the seeds where
  both cells exist; the primary family is Holm-corrected as one family; everything else is exploratory.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field

from tagrpo.common.modes import check_mode

KMAX = 0  # a contrast's k: the study's largest k (its test samples per question)
SUBSETS = ("all", "hard", "rest")
KINDS = ("greater", "less", "matches")  # as in tagrpo.evaluation.verdicts; "matches": non-inferiority at -margin
DECLARATIONS = ("embedded_v2", "capacity", "real_v2", "real_v3")  # tagrpo/experiments/declarations/<name>.py
RUNNER_UP = "@2nd"  # an arm of Study.runner_up at its second-best swept rate: "equal_sampling@2nd"


@dataclass(frozen=True)
class Contrast:
    """``arm - ref`` in pass@k on q0 over the questions of ``subset``, at ``setting``. ``ref`` is an arm or ``"base"``.
    With ``versus`` (another declaration's name) the contrast is the cost change: this study's per-seed ``arm - ref``
    minus the same in ``versus`` at the same setting, unpaired (Welch)."""

    arm: str
    ref: str
    k: int = 1
    subset: str = "all"
    setting: float | None = None
    kind: str = "greater"
    versus: str | None = None

    def __post_init__(self) -> None:
        check_mode("subset", self.subset, SUBSETS)
        check_mode("kind", self.kind, KINDS)

    def key(self, k_max: int) -> tuple:
        """How a verdict row is found: ``(setting, arm, ref, subset, k, versus)`` with ``KMAX`` resolved."""
        return self.setting, self.arm, self.ref, self.subset, self.k or k_max, self.versus


@dataclass(frozen=True)
class Sweep:
    """Each swept arm at every rate of ``rates`` on ``seeds`` (validation problems, ``samples`` each), per setting;
    the objective, for every arm alike, is validation pass@1 + pass@samples on q0; ties go to the smaller rate. Edge
    rule: an arm whose best rate is the grid's lowest (highest) is also swept at ``low_edge`` (``high_edge``) and
    chosen again over all it ran. ``base``: the base model is evaluated on each sweep seed too (``forms``: with its
    accuracy in every form)."""

    rates: tuple[float, ...]
    seeds: tuple[int, ...]
    samples: int
    low_edge: float | None = None
    high_edge: float | None = None
    base: bool = False
    forms: bool = False

    def edge(self, chosen: float | None, grid: tuple[float, ...]) -> float | None:
        """The edge rate to add for an arm whose chosen rate is ``chosen`` on ``grid``, or None."""
        if chosen is None:
            return None
        if chosen == min(grid) and self.low_edge is not None and self.low_edge not in grid:
            return self.low_edge
        if chosen == max(grid) and self.high_edge is not None and self.high_edge not in grid:
            return self.high_edge
        return None


@dataclass(frozen=True)
class Fixed:
    """An arm run at fixed rates (not swept) on some settings and seeds; its cells are reported as ``arm@rate``."""

    arm: str
    rates: tuple[float, ...]
    settings: tuple[float | None, ...]
    seeds: tuple[int, ...]

    def name(self, rate: float) -> str:
        return f"{self.arm}@{rate:g}"


@dataclass(frozen=True)
class Goal:
    """Issue 32's goal for each candidate at each setting: with hard questions, rest pass@1 minus equal-sampling
    GRPO's above ``-non_inferiority`` (lower bound) and the hard pass@k_max gain over equal-sampling at least
    ``keep_gain`` of TA-GRPO's; without (setting 0), pass@1 about equal (TOST at the study's margin) to the better of
    equal-sampling GRPO and GRPO-long."""

    candidates: tuple[str, ...]
    non_inferiority: float = 0.02
    keep_gain: float = 0.8


@dataclass(frozen=True)
class Study:
    """One study, declared. ``arms`` maps each arm to its configuration: for the ``regime`` task the arm's name in
    ``tagrpo.demo.arms.ARMS`` is its configuration (an empty dict); for ``sums`` the ``TAGRPOConfig`` fields
    (plus the task's ``plan`` and ``questions_factor``). ``choices`` names an arm that is one of several, chosen per
    setting with the rate (the best objective at its own best rate). ``task_options`` are the task's settings (they
    enter every cell's spec). ``margin``: the null of a ``matches`` contrast and, with ``tost``, the equivalence
    margin that calls an undecided primary contrast "no difference" (two one-sided tests, Holm over the family)."""

    name: str
    title: str
    task: str
    script: str
    outputs: str
    settings: tuple[float | None, ...]
    arms: dict[str, dict]
    primary_arms: tuple[str, ...]
    exploratory_arms: tuple[str, ...]
    seeds: tuple[int, ...]
    exploratory_seeds: tuple[int, ...]
    sweep: Sweep
    primary: tuple[Contrast, ...]
    exploratory: tuple[Contrast, ...] = ()
    post_hoc: tuple[Contrast, ...] = ()  # added after the verdicts were seen: uncorrected, and the report says so
    samples: int = 64
    margin: float = 0.02
    tost: bool = False
    choices: dict[str, tuple[str, ...]] = field(default_factory=dict)
    fixed: tuple[Fixed, ...] = ()
    goal: Goal | None = None
    forms_seeds: tuple[int, ...] = ()
    task_options: dict = field(default_factory=dict)
    beside: str | None = None  # another study's outputs name, set beside this one by difficulty (the real model)
    notes: tuple[str, ...] = ()  # sentences the report prints under its title
    knob: str = "hard_share"  # what a setting is, in the tables' headers
    runner_up: tuple[str, ...] = ()  # arms also run at their second-best rate on the exploratory seeds
    ended: dict = field(default_factory=dict)  # setting: why it ended by design with no arms (its contrasts say so)
    per_seed: bool = False  # the report lists the primary arms' pass@1 and completion tokens seed by seed

    def show(self, setting) -> str:
        """A setting as the tables print it: ``0.6``, ``natural``."""
        return f"{setting:g}" if isinstance(setting, int | float) else str(setting)

    def swept(self, arms: tuple[str, ...]) -> tuple[str, ...]:
        """The arms the sweep trains for ``arms``: a chosen arm (``choices``) stands for each of its options."""
        return tuple(a for arm in arms for a in self.choices.get(arm, (arm,)))

    def all_arms(self) -> tuple[str, ...]:
        return (*self.primary_arms, *self.exploratory_arms, *(f.name(r) for f in self.fixed for r in f.rates),
                *(a + RUNNER_UP for a in self.runner_up))

    def contrasts(self) -> list[tuple[Contrast, str]]:
        """Every declared contrast with its family: primary, exploratory or post hoc."""
        return ([(c, "primary") for c in self.primary] + [(c, "exploratory") for c in self.exploratory]
                + [(c, "post hoc") for c in self.post_hoc])


def declared(name: str) -> Study:
    """The declaration ``name`` (``tagrpo/experiments/declarations/<name>.py``, its ``STUDY``)."""
    check_mode("study", name, DECLARATIONS)
    return importlib.import_module(f"tagrpo.experiments.declarations.{name}").STUDY
