"""TAGRPOTrainer: TRL's GRPOTrainer with pools of rephrasings, pooled advantages and anchored log-probs.

Deviations from TRL's GRPOTrainer (everything else is TRL's):

1. TRL's group is a question's whole pool: the sampler repeats each original question ``(N+1)*G`` times in
   consecutive rows, so a pool never leaves its generation batch, whatever the shuffling or the number of
   processes. Every step gathers the question ids and fails if a pool was split.
2. Inside the step, row ``j`` of a pool is generated from variant ``n = j // G`` (``q0`` or a rephrasing).
3. The prompt tokens that condition the loss (current, old and reference log-probs) are chosen by
   ``tagrpo.core.select_prompt_tokens`` from ``anchor``; with ``anchor="behavior"`` the old log-probs are
   recomputed under the generating prompt.
4. Advantages: on the default path (``advantage_scope="pool"``, ``pool_mode="full"``, ``advantage_eps`` 1e-4, no
   ``pool_gate``, ``rephrased_weight`` 1) TRL's own, whose group is the pool (equal to
   ``tagrpo.core.pooled_advantages``: ``tests/test_trl_equivalence.py``); otherwise recomputed from the rewards by
   ``tagrpo.core.shaped_advantages`` (variant scope, adaptive pools whose rows not generated carry NaN, another eps,
   gated pools, weighted rephrased rows), which then also replaces TRL's copy in the completions table.
5. An inference engine's importance-sampling correction is computed on the generating prompt
   (``tagrpo.core.engine``): TRL's own under ``anchor="none"``; under ``"behavior"`` recomputed from the
   behaviour log-probs; under ``"original"`` off, or with ``engine_correction="generating"`` recomputed from one
   extra forward pass on ``[q_n | o]``. TRL's ``sampling/*`` metrics then describe the ratio that is applied.
6. Each step logs the pool and original-only diagnostics, the mean reward per variant, the rollouts spent,
   tokens/s and the share of unscorable rows (every reward NaN: advantage 0) to the console, ``report_to``
   and ``metrics.jsonl``.
7. ``pool_mode="adaptive"`` and ``"history"`` (generate a question's rephrasings only when its q0 group is, or was,
   uniform) are the opt-in subclass ``tagrpo.trainer.adaptive.AdaptiveTAGRPOTrainer``, through two hooks of
   tagrpo's own, ``_generate_rows`` and ``_score_rows``; ``tagrpo.trainer.run.trainer_class`` picks it from the
   config and this class refuses those modes with a sentence naming it.
8. A checkpoint also holds ``tagrpo_state.json`` (rollouts spent, tokens seen, and what a subclass adds), restored
   on resume, so that ``tagrpo/rollouts`` and tokens/s continue (``tagrpo.trainer.checkpoint``: a callback and
   ``train``, no private checkpoint method).
9. Speed, each switchable: on the CPU, TRL's fused LM head scores only the completion positions, as it does on
   CUDA (``cpu_completion_scoring``, ``tagrpo.trainer.compact``: the same log-probs, without the prompt positions'
   vocabulary projections); transformers generation runs under the trainer's autocast, the precision the loss is
   computed in (``generation_autocast``; TRL generates in the weights' full precision); opt-in, each distinct
   prompt of a scoring chunk runs once, the tokens all of them begin with once, and the rows only their
   completions against that key/value cache (``share_prompt_prefix``, ``tagrpo.trainer.prefix``: the same
   log-probs and gradients under rotary position embeddings, TRL's fused head; text-only calls, otherwise TRL's),
   and transformers generation prefills the same way (``tagrpo.generation.shared_prompt_generation``: the same
   samples).
10. The TRL internals relied on are few: the overrides ``_generate_and_score_completions``, ``_generate``,
   ``_calculate_rewards`` and ``_get_per_token_logps_and_entropies``, the calls ``_tokenize_prompts`` and
   ``_log_completion_extra``, the buffers ``_metrics`` and ``_logs`` and ``trl.trainer.utils._use_triton``
   (``tagrpo.trainer.contract``). Their names and
   signatures are checked when the trainer is built, the number of values each returns where tagrpo receives
   them, and what they return and do by ``tagrpo.trainer.contract.behaviour`` on a tiny TRL run
   (``tests/test_trl_contract.py``); each fails with a ``ContractError`` naming what changed. The overrides
   exchange the step's state through one ``tagrpo.trainer.seam.StepState`` and read TRL's generation result by
   name (``Generation``).
11. With several processes, at interpreter exit the trainer drops its distributed wrappers and destroys the
   default process group (``tagrpo.trainer.shutdown``): left alive, gloo's threads can abort the process.

What stays TRL's, said plainly: the loss is TRL's ``_compute_loss``. ``tagrpo.core.clipped_surrogate`` is the
written-out objective, tested equal to it for every ``loss_type`` that ``TAGRPOConfig`` accepts (dapo, grpo, bnpo,
dr_grpo), with the KL weighted by the ratio (``use_bias_correction_kl``, TRL's default) or not; the other loss
types are refused, as are TRL's other options tagrpo does not train, before any model loads
(``tagrpo.trainer.options``). Reward functions receive q0 as ``prompts`` for every row, also for rows generated from a
rephrasing (the reward checks the answer, which is the same), and each row's ``variant`` and
``generating_prompt``; the completions table shows the generating prompt and a ``variant`` column
(``tagrpo.trainer.completions``). Refused: tools, environments and ``rollout_func``, ``scale_rewards`` other than
group or none, multi-objective aggregation other than ``sum_then_normalize``.

A train row holds ``prompt`` (q0, text or conversation), ``rephrasings`` (at least N prompts of the same kind),
an ``id`` (the prompt text is used without one) and whatever the reward functions read (``answer``).
"""

from __future__ import annotations

import inspect
import logging
import time
from contextlib import nullcontext

import torch
from accelerate.utils import gather_object
from rich.console import Console
from transformers import ProcessorMixin
from transformers.trainer_callback import PrinterCallback, ProgressCallback
from trl import GRPOTrainer
from trl.trainer.utils import pad

from tagrpo.common.contracts import arity
from tagrpo.common.errors import InputError
from tagrpo.core import (
    engine_correction_plan,
    engine_importance_ratio,
    engine_ratio_metrics,
    group_diagnostics,
    select_prompt_tokens,
    shaped_advantages,
)
from tagrpo.generation import shared_prompt_generation
from tagrpo.trainer.checkpoint import CheckpointState, checkpoint_to_resume, epoch_sampler, read_state
from tagrpo.trainer.compact import completion_positions_only
from tagrpo.trainer.completions import replace_tail, reward_rows, variant_labels
from tagrpo.trainer.config import TAGRPOConfig
from tagrpo.trainer.contract import LABEL, LOGPS_FIELDS, TOKENIZE_FIELDS, TRL_ADVANTAGE_EPS, enforce_trl_contract
from tagrpo.trainer.dataset import checked_rephrasings
from tagrpo.trainer.metrics_log import MetricsLogger, RichProgress
from tagrpo.trainer.options import check_trainer_arguments
from tagrpo.trainer.prefix import shared_prompt_scores
from tagrpo.trainer.seam import Generation, StepState
from tagrpo.trainer.shutdown import shutdown_distributed_at_exit

logger = logging.getLogger(__name__)
_CONSOLE = Console(stderr=True)


class TAGRPOTrainer(GRPOTrainer):
    POOL_MODES = ("full",)  # the ``TAGRPOConfig.pool_mode`` values this class trains

    def __init__(self, model, reward_funcs, args: TAGRPOConfig, train_dataset=None, **kwargs):
        if not isinstance(args, TAGRPOConfig):
            raise TypeError(f"TAGRPOTrainer needs args=TAGRPOConfig(...), got {type(args).__name__}")
        if args.pool_mode not in self.POOL_MODES:
            raise InputError(
                f"pool_mode={args.pool_mode!r} needs tagrpo.trainer.adaptive.AdaptiveTAGRPOTrainer "
                f"(tagrpo.trainer.run.trainer_class picks it from the config); {type(self).__name__} trains full pools"
            )
        check_trainer_arguments(kwargs)  # tools, environments, rollout_func: refused before the model loads
        train_dataset = checked_rephrasings(train_dataset, args.num_rephrasings)  # a stream: row by row
        super().__init__(model, reward_funcs, args=args, train_dataset=train_dataset, **kwargs)
        enforce_trl_contract(self)
        if self.accelerator.num_processes > 1 and args.share_prompt_prefix:
            raise InputError(
                f"share_prompt_prefix=True runs in one process; got {self.accelerator.num_processes} (DDP and FSDP "
                "expect one forward per backward)"
            )
        if self.accelerator.num_processes > 1:
            shutdown_distributed_at_exit(self)  # a gloo group alive at exit can abort the process
        self.num_generations = args.pool_size  # TRL's group (sampler repeats, reward grouping) is the pool
        self._configure_engine_correction()
        self._tagrpo_step: StepState | None = None  # set for the duration of a training step
        self.rollouts = 0
        self._throughput_mark = (time.perf_counter(), 0)  # restarted by CheckpointState when training begins
        self.add_callback(CheckpointState(self))
        if args.metrics_jsonl:
            self.add_callback(
                MetricsLogger(args.output_dir, args.metrics_jsonl, console=_CONSOLE, every=args.console_every)
            )
            # The compact line above and metrics.jsonl replace transformers' printing of every log dict.
            self.remove_callback(PrinterCallback)
            self.remove_callback(ProgressCallback)
            if not args.disable_tqdm:
                self.add_callback(RichProgress(console=_CONSOLE))

    def _configure_engine_correction(self) -> None:
        """Decide who computes the engine's importance-sampling correction (``tagrpo.core.engine_correction_plan``)."""
        cfg: TAGRPOConfig = self.args
        wanted = self.use_vllm and self.vllm_importance_sampling_correction
        self.engine_correction_plan = engine_correction_plan(cfg.anchor, cfg.engine_correction) if wanted else "off"
        if wanted and self.engine_correction_plan == "off":
            if cfg.engine_correction == "auto":
                logger.warning(
                    "anchor=%r: the engine's importance-sampling correction is disabled (the engine's log-probs are "
                    "conditioned on the generating prompt, the loss on q0); engine_correction='generating' computes "
                    "it on the generating prompt at one extra forward pass per step",
                    cfg.anchor,
                )
            self.vllm_importance_sampling_correction = False

    # ---- step -------------------------------------------------------------------------------------------------
    def _generate_and_score_completions(self, inputs):
        if not self.model.training:
            return super()._generate_and_score_completions(inputs)
        cfg: TAGRPOConfig = self.args
        g, pool = cfg.num_generations, cfg.pool_size
        keys = gather_object([str(x.get("id", x["prompt"])) for x in inputs])
        _check_pools(keys, pool)
        start = self.accelerator.process_index * len(inputs)
        position = torch.arange(start, start + len(inputs))  # (R,)
        variant_index = (position % pool) // g  # (R,)
        variants = [[x["prompt"], *list(x.get("rephrasings") or [])[: cfg.num_rephrasings]] for x in inputs]
        self._tagrpo_step = StepState(variant_index, variants, inputs, keys)
        self._log_completion_extra("variant", variant_labels(variant_index))  # flushed into the table by TRL's step
        try:
            output = super()._generate_and_score_completions(inputs)
        finally:
            step, self._tagrpo_step = self._tagrpo_step, None
        replace_tail(self._logs["prompt"], gather_object(step.generating()))  # TRL logged q0 for every row
        if cfg.anchor == "behavior":
            output["old_per_token_logps"] = self._logps_on(output, *step.need("behavior"))
        if self.engine_correction_plan == "generating":
            output["importance_sampling_ratio"] = self._engine_ratio(output, step)
        generated = step.need("generated")  # (R,)
        advantages = self._pool_advantages(len(inputs), generated, step.need("rewards"))  # (R,) or None: TRL's
        if advantages is not None:
            output["advantages"] = advantages
        output["variant_index"] = variant_index.to(output["advantages"].device)
        generated = generated.to(output["completion_mask"].device)  # (R,)
        if not generated.all():  # rows never generated (AdaptiveTAGRPOTrainer) carry no loss
            output["completion_mask"] = output["completion_mask"] * generated.unsqueeze(1)
            output["num_items_in_batch"] = self.accelerator.gather(output["completion_mask"].sum()).sum()
        self.rollouts += int(self.accelerator.gather(generated.sum()).sum())
        self._metrics["train"]["tagrpo/rollouts"].append(float(self.rollouts))
        return output

    def _generate(self, prompts):
        with self.accelerator.autocast() if self.args.generation_autocast else nullcontext():
            step = self._tagrpo_step
            if step is None:
                return super()._generate(prompts)
            generating = step.generating()
            pool, self.num_generations = self.num_generations, self.args.num_generations
            shared = self.args.share_prompt_prefix and not self.use_vllm
            model = self.accelerator.unwrap_model(self.model_wrapped)
            try:  # engines that deduplicate prompts (vLLM server mode) see blocks of G identical prompts per variant
                with shared_prompt_generation(model) if shared else nullcontext():
                    result = self._generate_rows(generating, step)
            finally:
                self.num_generations = pool
        anchored = self._anchor(step.variants, step.variant_index)
        step.generating_ids = result.prompt_ids
        result.prompt_ids = _unpad(anchored.policy_ids, anchored.policy_mask)
        step.behavior = (anchored.behavior_ids, anchored.behavior_mask)
        return result.to_trl()

    def _generate_rows(self, generating: list, step: StepState) -> Generation:
        """The hook of the adaptive modes: generate the R rows, row ``i`` from the prompt ``generating[i]``, and set
        ``step.generated`` (R,) to the rows generated. Here: every row, in one call to TRL's ``_generate``."""
        step.generated = torch.ones(len(generating), dtype=torch.bool)  # (R,)
        return Generation.from_trl(super()._generate(generating))

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        step = self._tagrpo_step
        if step is None:
            return super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        rows = reward_rows(inputs, step.variant_index, step.generating())  # + variant, generating_prompt
        step.rewards = self._score_rows(rows, prompts, completions, completion_ids_list)  # (R_all, F)
        return step.rewards

    def _score_rows(self, rows, prompts, completions, completion_ids_list) -> torch.Tensor:
        """The adaptive modes' second hook: the (R_all, F) rewards of the step's rows (``rows`` as reward functions
        see them, ``tagrpo.trainer.completions``). Here: TRL's, every row scored once."""
        return super()._calculate_rewards(rows, prompts, completions, completion_ids_list)

    def _combined(self, per_func: torch.Tensor) -> torch.Tensor:
        """(R_all,) the weighted sum of the reward functions' (R_all, F) rewards; NaN where all are NaN."""
        rewards = (per_func * self.reward_weights.to(per_func.device).unsqueeze(0)).nansum(dim=1)  # (R_all,)
        rewards[torch.isnan(per_func).all(dim=1)] = torch.nan
        return rewards

    # ---- pieces -----------------------------------------------------------------------------------------------
    def _anchor(self, variants, variant_index):
        unique = {}
        for row in variants:
            for prompt in row:
                unique.setdefault(_key(prompt), prompt)
        tokenized = self._tokenize_prompts(list(unique.values()))
        token_lists, _, _ = arity(tokenized, TOKENIZE_FIELDS, LABEL, "_tokenize_prompts")
        ids_of = dict(zip(unique, token_lists, strict=True))
        rows = [torch.tensor(ids_of[_key(p)]) for row in variants for p in row]
        pad_id = self.text_tokenizer.pad_token_id
        flat_ids = pad(rows, padding_value=pad_id, padding_side="left")  # (R*(N+1), P)
        flat_mask = pad([torch.ones_like(t) for t in rows], padding_value=0, padding_side="left")  # (R*(N+1), P)
        shape = (len(variants), len(variants[0]), flat_ids.size(1))
        return select_prompt_tokens(flat_ids.view(shape), flat_mask.view(shape), variant_index, self.args.anchor)

    def _engine_ratio(self, output, step: StepState) -> torch.Tensor:
        """The engine correction on the generating prompt: old log-probs on [q_n | o] against the engine's; replaces
        TRL's, and the values TRL logged for it. (R, T), or (R, 1) in TRL's sequence modes."""
        if self.args.anchor == "behavior":
            old = output["old_per_token_logps"]  # (R, T) on q_n already
        else:
            rows = [torch.tensor(ids) for ids in step.need("generating_ids")]
            ids = pad(rows, padding_value=self.text_tokenizer.pad_token_id, padding_side="left")  # (R, P)
            mask = pad([torch.ones_like(t) for t in rows], padding_value=0, padding_side="left")  # (R, P)
            old = self._logps_on(output, ids, mask)  # (R, T): the extra forward pass
        sampling, completion_mask = output["sampling_per_token_logps"], output["completion_mask"]  # (R, T), (R, T)
        ratio = engine_importance_ratio(
            old, sampling, completion_mask, self.vllm_importance_sampling_mode,
            self.vllm_importance_sampling_clip_min, self.vllm_importance_sampling_clip_max,
        )
        for key, (value, reduce) in engine_ratio_metrics(old, sampling, completion_mask, ratio).items():
            gathered = self.accelerator.gather(value)  # (processes,)
            series = self._metrics["train"][key]
            if series:
                series.pop()  # TRL's value, computed against the loss's conditional
            series.append(getattr(gathered, reduce)().item())
        return ratio

    def _get_per_token_logps_and_entropies(self, model, *args, **kwargs):
        with completion_positions_only() if self.args.cpu_completion_scoring else nullcontext():
            bound = _SCORING.bind(self, model, *args, **kwargs)
            if not self.args.share_prompt_prefix or not _shareable(bound.arguments):
                return super()._get_per_token_logps_and_entropies(model, *args, **kwargs)
            a = bound.arguments
            ids, mask, keep = a["input_ids"], a["attention_mask"], a["logits_to_keep"]  # (R, P + T), (R, P + T)
            size = a.get("batch_size") or ids.size(0)
            chunks = [shared_prompt_scores(model, ids[i : i + size], mask[i : i + size], keep,
                                           a.get("compute_entropy", False), self.accelerator.autocast)
                      for i in range(0, ids.size(0), size)]
            if any(c is None for c in chunks):  # every prompt one token long: nothing to share
                return super()._get_per_token_logps_and_entropies(model, *args, **kwargs)
            entropies = torch.cat([e for _, e in chunks]) if a.get("compute_entropy") else None  # (R, T)
            return torch.cat([lp for lp, _ in chunks]), entropies, None  # (R, T)

    def _logps_on(self, output, ids, mask):
        """(R, T) log-probs of the completions conditioned on the (R, P) prompt ``ids``, under no_grad."""
        device = self.accelerator.device
        ids, mask = ids.to(device), mask.to(device)  # (R, P), (R, P)
        completion_ids = output["completion_ids"]  # (R, T)
        completion_mask = output["completion_mask"]  # (R, T)
        with torch.no_grad():
            result = self._get_per_token_logps_and_entropies(
                self.model,
                torch.cat([ids, completion_ids], dim=1),
                torch.cat([mask, completion_mask], dim=1),
                completion_ids.size(1),
                batch_size=self.args.per_device_train_batch_size,
            )
        logps, _, _ = arity(result, LOGPS_FIELDS, LABEL, "_get_per_token_logps_and_entropies")
        return logps  # (R, T)

    def _recomputes_advantages(self) -> bool:
        """Whether TRL's advantages differ from the pooled ones: outside the default path (deviation 4)."""
        cfg: TAGRPOConfig = self.args
        return (cfg.advantage_scope != "pool" or cfg.pool_mode != "full" or cfg.advantage_eps != TRL_ADVANTAGE_EPS
                or cfg.pool_gate != "none" or cfg.rephrased_weight != 1.0)

    def _pool_advantages(self, local_rows: int, generated: torch.Tensor, per_func: torch.Tensor):
        """Logs the pool diagnostics; returns the (R,) local advantages where TRL's differ, else None."""
        cfg: TAGRPOConfig = self.args
        rewards = self._combined(per_func)  # (R_all,)
        generated = self.accelerator.gather(generated.to(rewards.device))  # (R_all,)
        unscorable = torch.isnan(rewards) & generated  # (R_all,) generated, yet without a score
        self._metrics["train"]["tagrpo/unscorable"].append((unscorable.sum() / generated.sum()).item())
        grouped = rewards.view(-1, cfg.num_rephrasings + 1, cfg.num_generations)  # (B, N+1, G)
        for name, value in group_diagnostics(grouped).items():
            self._metrics["train"][f"tagrpo/{name}"].append(value)
        if cfg.reference_group_size:  # the first K samples of q0 as the "original" group, all G as its "pool"
            split = grouped.view(grouped.size(0), -1, cfg.reference_group_size)  # (B, G/K, K)
            for name, value in group_diagnostics(split).items():
                if name.startswith("rescued"):
                    self._metrics["train"][f"tagrpo/reference/{name}"].append(value)
        if not self._recomputes_advantages():
            return None
        advantages = shaped_advantages(
            grouped, scope=cfg.advantage_scope, scale=cfg.advantage_scale, eps=cfg.advantage_eps,
            gate=cfg.pool_gate, rephrased_weight=cfg.rephrased_weight,
        ).view(-1)  # (R_all,)
        replace_tail(self._logs["advantages"], advantages.tolist())  # TRL's copy for the completions table
        start = self.accelerator.process_index * local_rows
        return advantages[start : start + local_rows]  # (R,)

    # ---- checkpoints ------------------------------------------------------------------------------------------
    def train(self, resume_from_checkpoint=None, *args, **kwargs):
        folder = checkpoint_to_resume(resume_from_checkpoint, self.args.output_dir)  # True: the latest complete one
        if resume_from_checkpoint is True and folder is None:
            raise ValueError(f"No complete checkpoint found in output directory ({self.args.output_dir})")
        saved = read_state(folder)
        if saved is not None:
            self._restore_tagrpo_state(saved)
        return super().train(folder if resume_from_checkpoint is True else resume_from_checkpoint, *args, **kwargs)

    def _get_train_sampler(self, dataset=None):
        return epoch_sampler(super()._get_train_sampler(dataset))  # an epoch's order survives a resume

    def _tagrpo_state(self) -> dict:
        """What ``tagrpo_state.json`` holds (``tagrpo.trainer.checkpoint``); subclasses add their own keys."""
        return {"rollouts": self.rollouts, "tokens_seen": self.state.num_input_tokens_seen}

    def _restore_tagrpo_state(self, saved: dict) -> None:
        self.rollouts = saved["rollouts"]

    @property
    def text_tokenizer(self):
        """The tokenizer of ``processing_class`` (a processor's own tokenizer for vision-language models)."""
        processing = self.processing_class
        return processing.tokenizer if isinstance(processing, ProcessorMixin) else processing

    def log(self, logs, start_time=None):
        if self.model.training:
            now, seen = time.perf_counter(), self.state.num_input_tokens_seen
            then, seen_before = self._throughput_mark
            if now > then and seen > seen_before:
                logs["tagrpo/tokens_per_s"] = (seen - seen_before) / (now - then)
            self._throughput_mark = (now, seen)
        super().log(logs, start_time)


_SCORING = inspect.signature(GRPOTrainer._get_per_token_logps_and_entropies)
_PLAIN = ("self", "model", "input_ids", "attention_mask", "logits_to_keep", "batch_size", "compute_entropy")


def _shareable(arguments: dict) -> bool:
    """Whether a scoring call is text only and without an MoE loss."""
    extra = {k: v for k, v in arguments.items() if k not in _PLAIN}
    return all(v is None or v is False for v in extra.values())


def _key(prompt) -> str:
    return prompt if isinstance(prompt, str) else repr(prompt)


def _unpad(ids: torch.Tensor, mask: torch.Tensor) -> list[list[int]]:
    return [row[m.bool()].tolist() for row, m in zip(ids, mask, strict=True)]


def _check_pools(keys: list[str], pool: int) -> None:
    """Fail unless the gathered rows form whole consecutive pools of one question each."""
    if len(keys) % pool:
        raise RuntimeError(f"generation batch of {len(keys)} rows does not hold whole pools of {pool}")
    for start in range(0, len(keys), pool):
        block = set(keys[start : start + pool])
        if len(block) != 1:
            raise RuntimeError(f"pool at rows {start}..{start + pool - 1} mixes questions {sorted(block)[:3]}")

