"""The ``tagrpo`` section of a verl configuration and its checks against the rest of the configuration.

    tagrpo:
      num_rephrasings: 3             # N; 0 gives GRPO (with algorithm.adv_estimator=ta_grpo or grpo)
      anchor: original               # original | none (alias generating) | behavior (tagrpo.core.anchoring)
      short_rephrasings: fill_original   # a question with fewer than N rephrasings: fill_original | cycle
      record_dir: null               # a directory: per-step records of the pools (tagrpo.integrations.verl.record)

Batch sizes count original questions: ``data.train_batch_size`` questions per step, each expanded to N+1 prompts
of ``rollout.n`` responses; ``actor.ppo_mini_batch_size`` questions (whole pools) per optimizer step.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from tagrpo.core import check_mode, engine_correction_allowed, resolve_anchor
from tagrpo.integrations.verl.expand import EXPAND_RULES

logger = logging.getLogger(__name__)
POOL_ESTIMATORS = ("ta_grpo", "ta_grpo_variant", "grpo")


def _get(config: Any, dotted: str, default: Any = None) -> Any:
    node = config
    for part in dotted.split("."):
        if node is None:
            return default
        node = node.get(part, None) if hasattr(node, "get") else getattr(node, part, None)
    return default if node is None else node


@dataclass(frozen=True)
class TAGRPOSettings:
    num_rephrasings: int = 3
    anchor: str = "original"
    short_rephrasings: str = "fill_original"
    record_dir: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.num_rephrasings, bool) or not isinstance(self.num_rephrasings, int):
            raise TypeError(f"tagrpo.num_rephrasings must be an int, got {self.num_rephrasings!r}")
        if self.num_rephrasings < 0:
            raise ValueError(f"tagrpo.num_rephrasings must be >= 0, got {self.num_rephrasings}")
        object.__setattr__(self, "anchor", resolve_anchor("tagrpo.anchor", self.anchor))
        check_mode("tagrpo.short_rephrasings", self.short_rephrasings, EXPAND_RULES)

    @property
    def variants(self) -> int:
        """N+1 prompts per question."""
        return self.num_rephrasings + 1

    @classmethod
    def from_config(cls, config: Any) -> TAGRPOSettings:
        """Read ``config.tagrpo`` (defaults for missing keys)."""
        section = _get(config, "tagrpo") or {}
        return cls(
            num_rephrasings=int(section.get("num_rephrasings", cls.num_rephrasings)),
            anchor=str(section.get("anchor", cls.anchor)),
            short_rephrasings=str(section.get("short_rephrasings", cls.short_rephrasings)),
            record_dir=None if section.get("record_dir") is None else str(section.get("record_dir")),
        )


def check_config(config: Any, settings: TAGRPOSettings) -> list[str]:
    """Raise ValueError on settings that cannot work together; return warnings for the questionable ones."""
    if _get(config, "trainer.use_v1", False):
        raise ValueError(
            "the TA-GRPO trainer extends verl's RayPPOTrainer (DataProto fit loop): set trainer.use_v1=false"
        )
    bypass = bool(_get(config, "algorithm.rollout_correction.bypass_mode", False))
    if bypass and settings.anchor != "none":
        raise ValueError(
            f"algorithm.rollout_correction.bypass_mode uses the engine's log-probs (conditioned on the generating "
            f"prompt) as the old log-probs; it cannot be combined with tagrpo.anchor={settings.anchor!r}"
        )
    warnings = []
    estimator = str(_get(config, "algorithm.adv_estimator", ""))
    if estimator not in POOL_ESTIMATORS:
        warnings.append(f"algorithm.adv_estimator={estimator!r} ignores the pools; use ta_grpo")
    elif estimator == "grpo" and settings.num_rephrasings > 0:
        warnings.append("algorithm.adv_estimator=grpo normalises each variant alone (= ta_grpo_variant)")
    correction = _get(config, "algorithm.rollout_correction")
    is_set = correction is not None and any(_get(correction, key) for key in ("rollout_is", "rollout_rs"))
    if is_set and not engine_correction_allowed(settings.anchor):
        warnings.append(
            f"tagrpo.anchor={settings.anchor!r}: the rollout correction is disabled (rollout_log_probs are dropped); "
            "the engine's log-probs are conditioned on the generating prompt, the loss on q0"
        )
    for message in warnings:
        logger.warning(message)
    return warnings


def scaled_mini_batch(config: Any, settings: TAGRPOSettings) -> int:
    """Prompt rows per optimizer step that verl must see: ``ppo_mini_batch_size`` questions times N+1."""
    return int(_get(config, "actor_rollout_ref.actor.ppo_mini_batch_size")) * settings.variants
