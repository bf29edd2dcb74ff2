"""The one seam between TAGRPOTrainer and TRL's step: TRL's generation result by name, and the step's own state.

TRL's ``GRPOTrainer._generate`` returns an 8-tuple; ``Generation`` names its fields once (``GENERATE_FIELDS``: their
number checked on every call, what each holds by ``tagrpo.trainer.contract.behaviour``), and the overrides read
and build it by name, never by position.

TRL's ``_generate_and_score_completions`` calls ``_generate`` and ``_calculate_rewards`` from inside itself, with
arguments TRL chooses. The state those overrides need (which variant generates each row, the pool's prompts) and
produce (which rows were generated, the anchored prompts, the rewards) lives in one ``StepState``, created at the
start of the step and read after it; ``StepState.need`` fails with a sentence naming the override that did not
run, instead of a ``KeyError`` or a silently stale value when TRL changes the order of its calls.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import torch

from tagrpo.common.contracts import ContractError, arity

GENERATE_FIELDS = (
    "prompt_ids", "completion_ids", "tool_mask", "completions", "logprobs", "extra_fields", "images", "tool_images",
)  # fmt: skip


@dataclass
class Generation:
    """TRL's ``_generate`` result for R rows, by name."""

    prompt_ids: list  # R token lists
    completion_ids: list  # R token lists
    tool_mask: Any
    completions: list  # R texts or conversations
    logprobs: list | None  # R lists of per-token log-probs (vLLM) or None
    extra_fields: dict
    images: Any
    tool_images: Any

    @classmethod
    def from_trl(cls, result: tuple) -> Generation:
        return cls(*arity(result, GENERATE_FIELDS, "TRL's GRPOTrainer", "_generate"))

    def to_trl(self) -> tuple:
        return tuple(getattr(self, f.name) for f in fields(self))

    def uses_extras(self) -> bool:
        """Whether tools, environments or images took part (adaptive pools support none of them)."""
        return self.tool_mask is not None or bool(self.extra_fields) or self.images is not None or bool(
            self.tool_images
        )


@dataclass
class StepState:
    """One training step's state, shared by the overrides TRL calls inside ``_generate_and_score_completions``.

    Set before TRL's step: ``variant_index`` (R,) the variant each local row generates from (0 = q0),
    ``variants`` the R rows' prompts ``[q0, q_1, ..., q_N]``, ``inputs`` TRL's local rows, ``keys`` the gathered
    question ids (R_all). Set by ``_generate``: ``generated`` (R,) bool, ``generating_ids`` the R prompts' token
    lists the completions were sampled from, ``behavior`` the (R, P) ids and mask of the generating prompts.
    Set by ``_calculate_rewards``: ``rewards`` (R_all, F); by ``AdaptiveTAGRPOTrainer``'s phase 1, ``early_rewards``
    (the rows it scored and their rewards), which TRL's reward call then does not score again.
    """

    variant_index: torch.Tensor  # (R,)
    variants: list[list]
    inputs: list[dict]
    keys: list[str]
    generated: torch.Tensor | None = None  # (R,) bool
    generating_ids: list[list[int]] | None = None
    behavior: tuple[torch.Tensor, torch.Tensor] | None = None  # (R, P), (R, P)
    rewards: torch.Tensor | None = None  # (R_all, F)
    early_rewards: tuple[list[int], torch.Tensor] | None = None  # rows scored before TRL's reward call, (len, F)

    _SETTERS = {"generated": "_generate", "generating_ids": "_generate", "behavior": "_generate",
                "rewards": "_calculate_rewards"}  # fmt: skip

    def generating(self) -> list:
        """The R rows' generating prompts: row ``i`` is sampled from ``variants[i][variant_index[i]]``."""
        return [v[n] for v, n in zip(self.variants, self.variant_index.tolist(), strict=True)]

    def need(self, name: str):
        """The value of ``name``; a ``ContractError`` naming the override that should have set it when it is None."""
        value = getattr(self, name)
        if value is None:
            raise ContractError(
                f"TRL's `_generate_and_score_completions` did not call `{self._SETTERS[name]}` before it returned, "
                f"so tagrpo has no `{name}` for this step (TRL changed the order of its step)"
            )
        return value
