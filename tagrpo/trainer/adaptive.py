"""Adaptive pools, the opt-in ``AdaptiveTAGRPOTrainer``: a question's rephrasings are sampled only when its own G
samples of q0 say nothing.

``TAGRPOTrainer`` trains full pools and refuses the two modes below; ``AdaptiveTAGRPOTrainer`` adds them through
two hooks of ``TAGRPOTrainer``'s own, ``_generate_rows`` and ``_score_rows`` (each completion generated is scored
once: phase 1's q0 rows are not scored again, the rows never generated not at all;
``tagrpo.trainer.run.trainer_class`` picks the class from ``TAGRPOConfig.pool_mode``, which is how ``tagrpo train``
and the adaptive arms of ``tagrpo.demo.arms`` get it). Both modes run on one process with transformers
generation.

``pool_mode="adaptive"`` (in-step) decides from this step's samples of q0:

Within one step, phase 1 generates G samples of q0 for every question and scores them; phase 2 generates G
samples of each rephrasing for the questions whose q0 group is uniform (all right or all wrong:
``tagrpo.core.uniform_groups``). The layout of the batch stays TRL's, (N+1)*G rows per question: a row that was
not generated holds one EOS token, no loss (its completion mask is 0), and reward NaN, so the question is
normalised over the rows it has (its q0 group alone, or its whole pool) and the row's advantage is 0. A step
spends ``B*G + U*N*G`` rollouts for B questions of which U were uniform; the rows never generated still pass
through the loss's forward pass (masked), which costs compute but no generation.

``pool_mode="history"`` decides from the question's previous visit instead, with one generation call per step:
a question is expanded when its q0 group was uniform the last time it was drawn, or when it has not been drawn
yet (``history_choice``); its q0 group of this step then updates the record, which checkpoints keep
(``tagrpo_state.json``). Rows, rewards and rollouts are laid out and counted as above.
"""

from __future__ import annotations

import torch
from trl import GRPOTrainer

from tagrpo.core import uniform_groups
from tagrpo.trainer.completions import reward_rows
from tagrpo.trainer.config import POOL_MODES, TAGRPOConfig
from tagrpo.trainer.seam import Generation, StepState
from tagrpo.trainer.trainer import TAGRPOTrainer


class AdaptiveTAGRPOTrainer(TAGRPOTrainer):
    """``TAGRPOTrainer`` that also trains ``pool_mode="adaptive"`` and ``"history"`` (one process, transformers
    generation); with ``pool_mode="full"`` it trains as ``TAGRPOTrainer``."""

    POOL_MODES = POOL_MODES

    def __init__(self, model, reward_funcs, args: TAGRPOConfig, train_dataset=None, **kwargs):
        super().__init__(model, reward_funcs, args, train_dataset=train_dataset, **kwargs)
        if args.pool_mode != "full" and (self.use_vllm or self.accelerator.num_processes > 1):
            raise NotImplementedError(f"pool_mode={args.pool_mode!r} runs on one process with transformers generation")
        self.q0_uniform: dict[str, bool] = {}  # pool_mode="history": question id -> q0 group uniform at last visit

    def _generate_rows(self, generating: list, step: StepState) -> Generation:
        if self.args.pool_mode == "adaptive":
            return self._generate_adaptive(generating, step)
        if self.args.pool_mode == "history":
            return self._generate_history(generating, step)
        return super()._generate_rows(generating, step)

    def _generate_adaptive(self, generating, step: StepState) -> Generation:
        cfg: TAGRPOConfig = self.args
        first = phase_rows(step.variant_index)
        phase1 = Generation.from_trl(GRPOTrainer._generate(self, [generating[i] for i in first]))
        parts = [(first, phase1)]
        rows = reward_rows(step.inputs, step.variant_index, generating)
        scored = GRPOTrainer._calculate_rewards(  # (B*G, F) q0's samples, scored once: TRL's call skips them
            self, [rows[i] for i in first], [generating[i] for i in first], phase1.completions, phase1.completion_ids
        )
        step.early_rewards = (first, scored)
        q0 = self._combined(scored)  # (B*G,)
        uniform = uniform_groups(q0.view(-1, cfg.num_generations)).cpu()  # (B,)
        second = expansion_rows(step.variant_index, uniform, cfg.pool_size)
        if second:
            parts.append((second, Generation.from_trl(GRPOTrainer._generate(self, [generating[i] for i in second]))))
        return self._merge_partial(generating, parts, uniform, step)

    def _generate_history(self, generating, step: StepState) -> Generation:
        cfg: TAGRPOConfig = self.args
        chosen = history_choice(step.keys[:: cfg.pool_size], self.q0_uniform)  # (B,)
        rows = sorted(phase_rows(step.variant_index) + expansion_rows(step.variant_index, chosen, cfg.pool_size))
        part = Generation.from_trl(GRPOTrainer._generate(self, [generating[i] for i in rows]))
        return self._merge_partial(generating, [(rows, part)], chosen, step)

    def _merge_partial(self, generating, parts, expanded: torch.Tensor, step: StepState) -> Generation:
        """One generation from the ``(row indices, Generation)`` parts of an adaptive step; records which rows
        were generated and the share of questions expanded (``expanded`` is (B,) bool)."""
        generated = torch.zeros(len(generating), dtype=torch.bool)  # (R,)
        for indices, _ in parts:
            generated[indices] = True
        step.generated = generated
        self._metrics["train"]["tagrpo/expanded"].append(expanded.float().mean().item())
        empty = [{"role": "assistant", "content": ""}] if isinstance(generating[0], list) else ""
        return merge(parts, len(generating), empty, self.text_tokenizer.eos_token_id)

    def _score_rows(self, rows, prompts, completions, completion_ids_list) -> torch.Tensor:
        """(R, F) rewards: each generated row scored once (phase 1's rows are not scored again), NaN for the rows
        never generated. Adaptive pools run on one process: R == R_all."""
        if self.args.pool_mode == "full":
            return super()._score_rows(rows, prompts, completions, completion_ids_list)
        step = self._tagrpo_step
        todo = step.need("generated").clone()  # (R,)
        rewards = torch.full((len(rows), len(self.reward_funcs)), torch.nan, device=self.accelerator.device)  # (R, F)
        if step.early_rewards is not None:
            done, scored = step.early_rewards
            rewards[done] = scored.to(rewards.device)
            todo[done] = False
        todo = todo.nonzero().flatten().tolist()
        if todo:
            rewards[todo] = GRPOTrainer._calculate_rewards(
                self, [rows[i] for i in todo], [prompts[i] for i in todo], [completions[i] for i in todo],
                [completion_ids_list[i] for i in todo],
            )
        if self.args.pool_mode == "history":
            self._remember_q0(step.keys[:: self.args.pool_size], rewards)
        return rewards

    def _remember_q0(self, question_keys: list[str], per_func: torch.Tensor) -> None:
        """Record whether each question's q0 group of this step was uniform (``pool_mode="history"``)."""
        cfg: TAGRPOConfig = self.args
        q0 = self._combined(per_func).view(-1, cfg.pool_size)[:, : cfg.num_generations]  # (B, G)
        for key, uniform in zip(question_keys, uniform_groups(q0).tolist(), strict=True):
            self.q0_uniform[key] = bool(uniform)

    def _tagrpo_state(self) -> dict:
        return {**super()._tagrpo_state(), "q0_uniform": self.q0_uniform}

    def _restore_tagrpo_state(self, saved: dict) -> None:
        super()._restore_tagrpo_state(saved)
        self.q0_uniform = saved.get("q0_uniform", {})


def phase_rows(variant_index: torch.Tensor) -> list[int]:
    """Local row indices of q0's samples, generated first."""
    return (variant_index == 0).nonzero().flatten().tolist()


def expansion_rows(variant_index: torch.Tensor, uniform: torch.Tensor, pool: int) -> list[int]:
    """Local row indices of the rephrasings of uniform questions (``uniform`` is (B_local,), pools are local)."""
    question = torch.arange(len(variant_index)) // pool  # (R,)
    keep = (variant_index > 0) & uniform[question]  # (R,)
    return keep.nonzero().flatten().tolist()


def history_choice(keys: list[str], last_uniform: dict[str, bool]) -> torch.Tensor:
    """(B,) bool: expand question ``b`` (id ``keys[b]``) when its q0 group was uniform at its last visit or it has
    none yet."""
    return torch.tensor([last_uniform.get(k, True) for k in keys], dtype=torch.bool)  # (B,)


def merge(parts: list[tuple[list[int], Generation]], rows: int, empty_completion, eos_id: int) -> Generation:
    """One ``Generation`` for ``rows`` rows from the generations of row subsets; other rows are placeholders.

    ``parts`` holds ``(row indices, generation of those rows)`` pairs.
    """
    prompt_ids, completion_ids = [[] for _ in range(rows)], [[eos_id] for _ in range(rows)]
    completions, logprobs = [empty_completion] * rows, None
    for indices, part in parts:
        if part.uses_extras():
            raise NotImplementedError("adaptive pools support neither tools, environments nor images")
        if part.logprobs is not None and logprobs is None:
            logprobs = [[0.0] for _ in range(rows)]
        for k, i in enumerate(indices):
            prompt_ids[i], completion_ids[i] = part.prompt_ids[k], part.completion_ids[k]
            completions[i] = part.completions[k]
            if part.logprobs is not None:
                logprobs[i] = part.logprobs[k]
    return Generation(prompt_ids, completion_ids, None, completions, logprobs, {}, None, [])
