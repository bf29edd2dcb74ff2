"""TAGRPOConfig: TRL's GRPOConfig plus TA-GRPO's fields (N, anchoring, advantage scope and eps, pool mode, the
rule for questions with fewer than N rephrasings) and two logging fields.

``num_generations`` keeps TRL's name and means G, the samples drawn for *each* prompt variant. A question's pool
is ``(num_rephrasings + 1) * num_generations`` rows; ``generation_batch_size`` counts rows and must hold whole
pools. ``per_device_train_batch_size`` left unset is one whole pool (TRL's 8 would split a pool of 32), so a
config of N and G alone is valid. Baselines are configurations:

- GRPO: ``num_rephrasings=0``;
- equal-sampling GRPO: ``num_rephrasings=0`` and ``num_generations=(N+1)*G`` (the rollouts of TA-GRPO);
- per-variant normalisation: ``advantage_scope="variant"``;
- no anchoring (v1 and the public code): ``anchor="none"``.

Variants of ours (issue 32): ``pool_gate="q0_all_wrong"`` (a question's pool only where its q0 group is all wrong)
and ``rephrased_weight`` < 1 (the rephrased rows' surrogate terms weighted), both by ``tagrpo.core.shaped_advantages``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

from trl import GRPOConfig

from tagrpo.common.errors import InputError
from tagrpo.core import (
    ENGINE_CORRECTIONS,
    GATES,
    SCOPES,
    check_mode,
    off_policy_mask_conditionals,
    resolve_anchor,
)
from tagrpo.data import SHORT_RULES
from tagrpo.trainer.options import LOSS_TYPES, check_trl_options  # noqa: F401 (LOSS_TYPES: the CLI's choices)

# transformers 5.24 renames gradient checkpointing; TRL still sets the old name on every config and model, which
# repeats FutureWarnings per trainer. The behaviour is unchanged, so those messages are silenced here.
warnings.filterwarnings(
    "ignore", message=r"`(is_)?gradient_checkpointing(_enable|_disable)?` is deprecated", category=FutureWarning
)

POOL_MODES = ("full", "adaptive", "history")


@dataclass
class TAGRPOConfig(GRPOConfig):
    per_device_train_batch_size: int | None = field(
        default=None,
        metadata={"help": "Rows per device per forward and backward pass; unset: one whole pool, "
                  "(num_rephrasings + 1) * num_generations rows (TRL's default, 8, would split a pool)."},
    )
    num_rephrasings: int = field(
        default=3, metadata={"help": "N, rephrasings per question; 0 gives GRPO (or equal-sampling GRPO)."}
    )
    anchor: str = field(
        default="original",
        metadata={
            "help": "Prompt that conditions the loss (current, old and reference log-probs) of every pool row: "
            "original (q0, the paper), none (the prompt that generated the row: v1 and the public code; alias "
            "generating) or "
            "behavior (current and reference on q0, old on the generating prompt)."
        },
    )
    engine_correction: str = field(
        default="auto",
        metadata={
            "help": "vLLM's importance-sampling correction, always on the generating prompt: auto (TRL's under "
            "anchor none, from the behaviour log-probs under behavior, off under original), generating (also under "
            "original, at one extra forward pass per step) or off."
        },
    )
    advantage_scope: str = field(
        default="pool",
        metadata={"help": "Normalise rewards over the whole pool (the paper) or over each prompt's G (variant)."},
    )
    pool_mode: str = field(
        default="full",
        metadata={
            "help": "full: sample G for q0 and for each rephrasing, (N+1)*G rollouts per question (the paper); "
            "adaptive: sample the rephrasings only for questions whose G samples of q0 all got the same reward "
            "(B*G + U*N*G rollouts for B questions of which U are uniform; one process, transformers generation); "
            "history: the same from the question's previous visit (uniform then, or not drawn before), with one "
            "generation call per step."
        },
    )
    pool_gate: str = field(
        default="none",
        metadata={
            "help": "none: every question's pool carries signal (the paper); q0_all_wrong (gated pools): a "
            "question's rephrased rows carry signal only when all of its q0 samples are wrong, otherwise its q0 "
            "rows are normalised over their own G as GRPO would and its rephrased rows get advantage 0."
        },
    )
    rephrased_weight: float = field(
        default=1.0,
        metadata={"help": "Multiplies the rephrased rows' advantages (their surrogate terms; not the KL): 1 is the "
                  "paper's TA-GRPO, 0 keeps only q0's rows' signal."},
    )
    advantage_eps: float = field(default=1e-4, metadata={"help": "Added to the reward std (TRL uses 1e-4)."})
    short_rephrasings: str = field(
        default="fill_original",
        metadata={
            "help": "Questions with fewer than N rephrasings: fill_original (pad with q0), cycle (repeat its "
            "rephrasings) or drop (skip the question); counted in the logs and job.json."
        },
    )
    reference_group_size: int | None = field(
        default=None,
        metadata={
            "help": "Diagnostics only, without rephrasings: also log the rescue split of each question's first K "
            "samples against all G (tagrpo/reference/rescued/...; equal-sampling GRPO's counterpart of a pool's "
            "rescue, with K the G of the TA-GRPO it is compared with). G must be a multiple of K."
        },
    )
    generation_autocast: bool = field(
        default=True,
        metadata={"help": "Generate with transformers under the trainer's autocast (bf16/fp16 when training in it), "
                  "as the loss is computed; False: TRL's full-precision generation."},
    )
    cpu_completion_scoring: bool = field(
        default=True,
        metadata={"help": "On the CPU, project only the completion positions through the vocabulary (as TRL does "
                  "on CUDA); False: TRL's every position. The same log-probs."},
    )
    share_prompt_prefix: bool = field(
        default=False,
        metadata={"help": "Score each distinct prompt of a chunk once and only the completions per row "
                  "(tagrpo.trainer.prefix): the same log-probs from fewer tokens; needs gradient_checkpointing=False "
                  "and one process."},
    )
    metrics_jsonl: str | None = field(
        default="metrics.jsonl",
        metadata={"help": "File in output_dir receiving one JSON line per log step; None disables it."},
    )
    console_every: int = field(
        default=1,
        metadata={"help": "Print the compact console line of every K-th log step (0: never; the bar stays)."},
    )

    def __post_init__(self):
        if self.per_device_train_batch_size is None:
            self.per_device_train_batch_size = self.pool_size
        super().__post_init__()
        self.anchor = resolve_anchor("anchor", self.anchor)
        check_mode("advantage_scope", self.advantage_scope, SCOPES)
        check_mode("engine_correction", self.engine_correction, ENGINE_CORRECTIONS)
        if self.off_policy_mask_threshold is not None and not off_policy_mask_conditionals(self.anchor, self.use_vllm):
            raise InputError(
                f"off_policy_mask_threshold compares the sampling log-probs (on the generating prompt"
                f"{' under vLLM' if self.use_vllm else ''}) with the current ones (on q0 under "
                f"anchor={self.anchor!r}): different conditionals; use anchor='none', or leave "
                "off_policy_mask_threshold unset"
            )
        check_mode("short_rephrasings", self.short_rephrasings, SHORT_RULES)
        check_mode("pool_mode", self.pool_mode, POOL_MODES)
        check_mode("pool_gate", self.pool_gate, GATES)
        if self.rephrased_weight < 0:
            raise InputError(f"rephrased_weight must be >= 0, got {self.rephrased_weight}")
        check_trl_options(self)  # TRL's options TA-GRPO does not train: refused in one line (tagrpo.trainer.options)
        if self.share_prompt_prefix and self.gradient_checkpointing:
            raise InputError(
                "share_prompt_prefix=True needs gradient_checkpointing=False (TRL's default is True): checkpointed "
                "layers return no key/value cache"
            )
        if self.console_every < 0:
            raise InputError(f"console_every must be >= 0, got {self.console_every}")
        if self.num_rephrasings < 0:
            raise InputError(f"num_rephrasings must be >= 0, got {self.num_rephrasings}")
        if self.reference_group_size is not None and (
            self.num_rephrasings or self.reference_group_size < 1 or self.num_generations % self.reference_group_size
        ):
            raise InputError(
                f"reference_group_size ({self.reference_group_size}) needs num_rephrasings=0 and must divide "
                f"num_generations ({self.num_generations})"
            )
        if self.generation_batch_size % self.pool_size != 0:
            raise InputError(
                f"generation_batch_size ({self.generation_batch_size}) must hold whole pools of "
                f"(num_rephrasings + 1) * num_generations = {self.pool_size} rows"
            )

    @property
    def pool_size(self) -> int:
        """Rows per original question: (N+1) * G."""
        return (self.num_rephrasings + 1) * self.num_generations

    @property
    def advantage_scale(self) -> str:
        """``scale`` for ``tagrpo.core.pooled_advantages`` from TRL's ``scale_rewards``."""
        return "std" if self.scale_rewards == "group" else "none"
