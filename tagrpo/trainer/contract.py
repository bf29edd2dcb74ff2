"""What TAGRPOTrainer relies on in TRL's GRPOTrainer, checked when the trainer is built (``tagrpo.common.contracts``).

Every private name the subclass overrides or calls, its signature where tagrpo passes arguments, the shape of
``_generate``'s result, the keys of TRL's step output and metrics that tagrpo reads or replaces, and the log
buffers it writes. ``tests/test_trl_contract.py`` runs the same clauses against the installed TRL and shows each
kind of clause failing with its sentence on a changed copy.
"""

from __future__ import annotations

import trl
import trl.trainer.utils as trl_utils
from trl import GRPOTrainer

from tagrpo.common.contracts import Clause, attribute, enforce, mentions, method, returns
from tagrpo.trainer.seam import GENERATE_FIELDS

LABEL = "TRL's GRPOTrainer"
STEP_KEYS = ('"completion_ids"', '"completion_mask"', '"advantages"', '"old_per_token_logps"',
             '"importance_sampling_ratio"', '"sampling_per_token_logps"', '"num_items_in_batch"')  # fmt: skip
TRL_ADVANTAGE_EPS = 1e-4  # TRL's std offset: where advantage_eps equals it, TRL's advantages are the pooled ones
OWN_ATTRIBUTES = ("_tagrpo_step", "rollouts", "q0_uniform", "engine_correction_plan", "_throughput_mark")
ENGINE_METRICS = ("sampling/sampling_logp_difference/mean", "sampling/importance_sampling_ratio/max")


def class_clauses(owner: type = GRPOTrainer, utils=trl_utils) -> list[Clause]:
    """The clauses about TRL's classes and modules (``owner`` and ``utils`` replaceable for the tests)."""
    return [
        method(owner, "_generate_and_score_completions", ("inputs",), LABEL),
        method(owner, "_generate", ("prompts",), LABEL),
        returns(owner, "_generate", GENERATE_FIELDS, LABEL),
        mentions(owner, "_generate_and_score_completions", ["= self._generate(prompts)"], LABEL,
                 "the step generates through `_generate`, which tagrpo overrides to generate each row's variant"),
        mentions(owner, "_generate_and_score_completions", ["self._calculate_rewards("], LABEL,
                 "the step scores through `_calculate_rewards`, which tagrpo overrides to read the rewards"),
        mentions(owner, "_generate_and_score_completions", STEP_KEYS, LABEL,
                 "the step's output keys tagrpo reads or replaces"),
        mentions(owner, "_generate_and_score_completions", ['self._logs["advantages"]'], LABEL,
                 "the completions table's advantages, which tagrpo replaces where it recomputes them"),
        mentions(owner, "_generate_and_score_completions", ENGINE_METRICS, LABEL,
                 "the engine-correction metrics tagrpo replaces when it recomputes the correction"),
        mentions(owner, "_generate_and_score_completions", ["(std_rewards + 1e-4)"], LABEL,
                 "the std offset with which TRL's advantages equal the pooled ones, so that tagrpo keeps them"),
        method(owner, "_generate_single_turn", ("prompt_ids", "images", "multimodal_fields", "num_generations"),
               LABEL),
        method(owner, "_calculate_rewards", ("inputs", "prompts", "completions", "completion_ids_list"), LABEL),
        method(owner, "_get_per_token_logps_and_entropies",
               ("model", "input_ids", "attention_mask", "logits_to_keep", "batch_size"), LABEL),
        method(owner, "_tokenize_prompts", ("prompts",), LABEL),
        returns(owner, "_tokenize_prompts", ("prompt_ids", "images", "multimodal_fields"), LABEL),
        method(owner, "_save_checkpoint", ("model", "trial"), LABEL),
        method(owner, "_load_optimizer_and_scheduler", ("checkpoint",), LABEL),
        method(owner, "_get_output_dir", ("trial",), LABEL),
        method(owner, "log", ("logs", "start_time"), LABEL),
        attribute(utils, "pad", "trl.trainer.utils"),
        attribute(utils, "_use_triton", "trl.trainer.utils"),
    ]


def instance_clauses(trainer) -> list[Clause]:
    """The clauses about a trainer TRL has just built: its log buffers and the settings tagrpo reads are there, and
    the names TAGRPOTrainer sets afterwards (``OWN_ATTRIBUTES``) are not TRL's."""
    label = f"a built {LABEL}"
    names = ("_metrics", "_logs", "_tokenizer", "reward_weights", "use_vllm", "vllm_importance_sampling_correction",
             "vllm_importance_sampling_mode", "vllm_importance_sampling_clip_min", "vllm_importance_sampling_clip_max",
             "tools", "environment_factories", "num_generations")  # fmt: skip
    clauses = [attribute(trainer, name, label) for name in names]
    logs = getattr(trainer, "_logs", {})
    clauses.append(Clause("_logs['advantages']", lambda: None if "advantages" in logs else
                          f"{label}'s `_logs` no longer has the key 'advantages' (it has {sorted(logs)})"))
    metrics = getattr(trainer, "_metrics", {})
    clauses.append(Clause("_metrics['train']", lambda: None if "train" in metrics else
                          f"{label}'s `_metrics` no longer has the key 'train' (it has {sorted(metrics)})"))
    for name in OWN_ATTRIBUTES:
        clauses.append(Clause(f"{name} free", lambda name=name: None if not hasattr(trainer, name) else
                              f"{label} now has its own `{name}`, which TAGRPOTrainer also sets (a name clash)"))
    return clauses


def enforce_trl_contract(trainer=None) -> None:
    """Raise ``tagrpo.common.contracts.ContractError`` naming every relied-on TRL name that changed."""
    clauses = class_clauses() + (instance_clauses(trainer) if trainer is not None else [])
    enforce(clauses, "trl", trl.__version__, "TAGRPOTrainer")
