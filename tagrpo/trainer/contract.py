"""What TAGRPOTrainer relies on in TRL's GRPOTrainer, and the checks that say when TRL changed it.

The default ``TAGRPOTrainer`` touches ten private TRL members: it overrides ``_generate_and_score_completions``,
``_generate``, ``_calculate_rewards``, ``_get_per_token_logps_and_entropies`` and ``_get_train_sampler`` (whose
``RepeatSampler`` it gives a ``set_epoch``: ``tagrpo.trainer.checkpoint``), calls ``_tokenize_prompts`` and
``_log_completion_extra`` (the completions table's ``variant`` column), writes into the buffers ``_metrics`` and
``_logs`` (the table's prompts and advantages) and swaps ``trl.trainer.utils._use_triton`` while TRL scores
(``tagrpo.trainer.compact``). ``AdaptiveTAGRPOTrainer`` adds none. Three kinds of check, each failing with a
sentence naming the method, what tagrpo expects and what it found:

- built with the trainer (``enforce_trl_contract``; ``tagrpo.common.contracts``): every name is there and takes the
  parameters tagrpo passes (``inspect.signature``), and the attributes TRL sets in ``__init__`` are there;
- where tagrpo receives a result: the number of values ``_generate``, ``_tokenize_prompts`` and
  ``_get_per_token_logps_and_entropies`` return (``tagrpo.common.contracts.arity``);
- on a tiny TRL run (``behaviour``: a plain ``GRPOTrainer`` on a tiny random model, one step on the CPU, seconds):
  what those methods return and what TRL's step does with it, the values the overrides rely on
  (``behaviour_clauses``; ``tests/test_trl_contract.py`` runs it on the installed TRL and on changed copies). With
  ``beta`` > 0 that includes the reference log-probs: the reference model's, or with a PEFT adapter the policy's with
  the adapter disabled, on the ``prompt_ids`` the step returns, where tagrpo puts q0 (``tests/test_lora.py``).
"""

from __future__ import annotations

import copy
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass

import torch
import trl
import trl.trainer.utils as trl_utils
from accelerate.utils import is_peft_model
from transformers import TrainerCallback
from trl import GRPOTrainer

from tagrpo.common.contracts import Clause, arity_problem, attribute, enforce, method, problems
from tagrpo.core import pooled_advantages
from tagrpo.trainer.seam import GENERATE_FIELDS

LABEL = "TRL's GRPOTrainer"
TRL_ADVANTAGE_EPS = 1e-4  # TRL's std offset: where advantage_eps equals it, TRL's advantages are the pooled ones
TOKENIZE_FIELDS = ("prompt_ids", "images", "multimodal_fields")
LOGPS_FIELDS = ("logps", "entropies", "aux_loss")
STEP_KEYS = ("prompt_ids", "prompt_mask", "completion_ids", "completion_mask", "advantages", "num_items_in_batch")
PROBE_COLUMN = "tagrpo_contract_probe"  # an extra column the behaviour check logs through `_log_completion_extra`
OWN_ATTRIBUTES = ("_tagrpo_step", "rollouts", "q0_uniform", "engine_correction_plan", "_throughput_mark")


def class_clauses(owner: type = GRPOTrainer, utils=trl_utils, callback: type = TrainerCallback) -> list[Clause]:
    """The names and signatures relied on (``owner``, ``utils`` and ``callback`` replaceable for the tests)."""
    hooks = "transformers' TrainerCallback"
    return [
        method(owner, "_generate_and_score_completions", ("inputs",), LABEL),
        method(owner, "_generate", ("prompts",), LABEL),
        method(owner, "_calculate_rewards", ("inputs", "prompts", "completions", "completion_ids_list"), LABEL),
        method(owner, "_get_per_token_logps_and_entropies",
               ("model", "input_ids", "attention_mask", "logits_to_keep", "batch_size"), LABEL),
        method(owner, "_tokenize_prompts", ("prompts",), LABEL),
        method(owner, "_log_completion_extra", ("column", "values"), LABEL),
        method(owner, "train", ("resume_from_checkpoint",), LABEL),
        method(owner, "_get_train_sampler", ("dataset",), LABEL),
        attribute(utils, "RepeatSampler", "trl.trainer.utils"),
        method(owner, "log", ("logs", "start_time"), LABEL),
        method(callback, "on_train_begin", ("args", "state", "control"), hooks),
        method(callback, "on_save", ("args", "state", "control"), hooks),
        attribute(utils, "pad", "trl.trainer.utils"),
        attribute(utils, "_use_triton", "trl.trainer.utils"),
    ]


def instance_clauses(trainer) -> list[Clause]:
    """The clauses about a trainer TRL has just built: its log buffers and the settings tagrpo reads are there, and
    the names TAGRPOTrainer sets afterwards (``OWN_ATTRIBUTES``) are not TRL's."""
    label = f"a built {LABEL}"
    names = ("_metrics", "_logs", "processing_class", "reward_weights", "use_vllm",
             "vllm_importance_sampling_correction", "vllm_importance_sampling_mode",
             "vllm_importance_sampling_clip_min", "vllm_importance_sampling_clip_max", "num_generations")  # fmt: skip
    clauses = [attribute(trainer, name, label) for name in names]
    logs = getattr(trainer, "_logs", {})
    for key in ("advantages", "prompt"):
        clauses.append(Clause(f"_logs[{key!r}]", lambda key=key: None if key in logs else
                              f"{label}'s `_logs` no longer has the key {key!r} (it has {sorted(logs)})"))
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


# ---- behaviour: one step of a plain TRL trainer ---------------------------------------------------------------
@dataclass
class StepRecord:
    """What one training step of a plain ``GRPOTrainer`` did at the names tagrpo overrides, calls or writes."""

    group: int  # TRL's num_generations: rows per advantage group
    prompts: list  # the batch's R prompts, in row order
    calls: list[tuple[str, tuple]]  # ("_generate" or "_calculate_rewards", positional arguments), in call order
    generated: object  # what `_generate` returned (last call)
    rewards: object  # what `_calculate_rewards` returned (last call): (R_all, F)
    reward_weights: torch.Tensor  # (F,)
    output: dict  # what `_generate_and_score_completions` returned
    logged_advantages: list | None  # the completions table's last R_all advantages, None without that buffer
    metrics: object  # the trainer's `_metrics`
    tokenized: object  # what `_tokenize_prompts(prompts)` returned
    decoded: list[str]  # the completion ids `_generate` returned, decoded by the processing class
    logps: object  # what `_get_per_token_logps_and_entropies` returned on the step's prompts and completions
    reference: torch.Tensor | None = None  # (R, T) the reference's log-probs on them; None when beta is 0
    logged_prompts: list | None = None  # the completions table's last R_all prompts, None without that buffer
    logged_extra: list | None = None  # its column PROBE_COLUMN, logged by `_log_completion_extra` before the step


def record_step(trainer: GRPOTrainer, questions: int = 2) -> StepRecord:
    """Run ``_generate_and_score_completions`` of a built ``trainer`` (TRL's class, text prompts, transformers
    generation) on ``questions`` groups of its first train rows, recording what happens at tagrpo's seam."""
    group = trainer.num_generations
    inputs = [dict(trainer.train_dataset[i // group]) for i in range(questions * group)]
    prompts = [x["prompt"] for x in inputs]
    calls, results = [], {}
    for name in ("_generate", "_calculate_rewards"):
        setattr(trainer, name, _spy(getattr(trainer, name), name, calls, results))
    trainer.model.train()
    trainer._log_completion_extra(PROBE_COLUMN, list(range(len(inputs))))
    try:
        output = trainer._generate_and_score_completions(inputs)
    finally:
        del trainer._generate, trainer._calculate_rewards
    generated = results.get("_generate")
    completion_ids = generated[1] if isinstance(generated, tuple) and len(generated) > 1 else []
    logs = getattr(trainer, "_logs", {}).get("advantages")
    logged_prompts = getattr(trainer, "_logs", {}).get("prompt")
    logged_extra = getattr(trainer, "_logs", {}).get("extra", {}).get(PROBE_COLUMN)
    rows = len(prompts) * trainer.accelerator.num_processes
    with torch.no_grad():
        ids = torch.cat([output["prompt_ids"], output["completion_ids"]], dim=1)  # (R, P+T)
        mask = torch.cat([output["prompt_mask"], output["completion_mask"]], dim=1)  # (R, P+T)
        logps = trainer._get_per_token_logps_and_entropies(trainer.model, ids, mask, output["completion_ids"].size(1),
                                                           batch_size=len(prompts))
        reference = None
        if trainer.beta != 0.0:
            with _reference_model(trainer) as model:
                reference = trainer._get_per_token_logps_and_entropies(
                    model, ids, mask, output["completion_ids"].size(1), batch_size=len(prompts)
                )[0]  # (R, T)
    return StepRecord(
        group, prompts, calls, generated, results.get("_calculate_rewards"), trainer.reward_weights.cpu(), output,
        None if logs is None else list(logs)[-rows:], trainer._metrics, trainer._tokenize_prompts(prompts),
        trainer.processing_class.batch_decode(completion_ids, skip_special_tokens=True), logps, reference,
        None if logged_prompts is None else list(logged_prompts)[-rows:],
        None if logged_extra is None else list(logged_extra)[-rows:],
    )


@contextmanager
def _reference_model(trainer):
    """The model whose log-probs tagrpo expects as the reference: TRL's ``ref_model``, else (a PEFT policy) the
    policy with its adapter disabled, i.e. the base model."""
    if trainer.ref_model is not None:
        yield trainer.ref_model
        return
    policy = trainer.accelerator.unwrap_model(trainer.model)
    if not is_peft_model(policy):
        raise ValueError("a trainer with beta > 0 has neither a reference model nor a PEFT adapter to disable")
    with policy.disable_adapter():
        yield trainer.model


def _spy(original, name: str, calls: list, results: dict):
    def wrapped(*args):
        calls.append((name, copy.copy(args)))
        results[name] = original(*args)
        return results[name]

    return wrapped


def behaviour(trainer: GRPOTrainer) -> list[str]:
    """The sentences of every behaviour relied on that a step of ``trainer`` (TRL's, built) does not show."""
    return problems(behaviour_clauses(record_step(trainer)))


def behaviour_clauses(record: StepRecord) -> list[Clause]:
    """What the overrides rely on TRL's step doing, judged on ``record`` (replaceable for the tests)."""
    return [
        Clause("one _generate call", lambda: _one_generate_call(record)),
        Clause("rewards of the generation", lambda: _rewards_of_the_generation(record)),
        Clause("_generate arity", lambda: arity_problem(record.generated, GENERATE_FIELDS, LABEL, "_generate")),
        Clause("_generate fields", lambda: _generate_fields(record)),
        Clause("_tokenize_prompts", lambda: _tokenized(record)),
        Clause("rewards shape", lambda: _rewards_shape(record)),
        Clause("step output", lambda: _step_output(record)),
        Clause("advantages", lambda: _advantages(record)),
        Clause("logged advantages", lambda: _logged_advantages(record)),
        Clause("completions table", lambda: _completions_table(record)),
        Clause("metrics", lambda: _metrics(record)),
        Clause("log-probs", lambda: _logps(record)),
        Clause("reference log-probs", lambda: _reference(record)),
    ]


def _one_generate_call(record: StepRecord) -> str | None:
    args = [a for name, a in record.calls if name == "_generate"]
    if len(args) == 1 and list(args[0][0]) == record.prompts:
        return None
    found = f"{len(args)} times" if len(args) != 1 else "once, with other prompts than the batch's"
    return (f"{LABEL}'s `_generate_and_score_completions` now calls `_generate` {found}; tagrpo expects one call "
            f"with the batch's {len(record.prompts)} prompts, where it generates each row's variant")


def _rewards_of_the_generation(record: StepRecord) -> str | None:
    names = [name for name, _ in record.calls]
    expected = "one call to `_calculate_rewards` after `_generate`, with its completions and completion ids"
    if names.count("_calculate_rewards") != 1 or names.index("_calculate_rewards") < names.index("_generate"):
        return f"{LABEL}'s step now calls ({', '.join(names)}); tagrpo expects {expected}"
    args = next(a for name, a in record.calls if name == "_calculate_rewards")
    gen = record.generated if isinstance(record.generated, tuple) else ()
    if len(args) < 4 or len(gen) < 4 or args[2] is not gen[3] or args[3] is not gen[1]:
        return f"{LABEL}'s step now passes `_calculate_rewards` other completions; tagrpo expects {expected}"
    return None


def _generate_fields(record: StepRecord) -> str | None:
    gen = record.generated
    if not isinstance(gen, tuple) or len(gen) != len(GENERATE_FIELDS):
        return None  # the arity clause names it
    rows = len(record.prompts)
    tokenized = None if _tokenized(record) else _lists(record.tokenized[0])  # None: that clause names it
    expected = {
        "prompt_ids": ("the prompts' token lists from `_tokenize_prompts`",
                       lambda v: _is_token_lists(v, rows) and tokenized in (None, _lists(v))),
        "completion_ids": (f"{rows} lists of token ids", lambda v: _is_token_lists(v, rows)),
        "tool_mask": ("None without tools", lambda v: v is None),
        "completions": ("the completion ids decoded", lambda v: list(v) == record.decoded),
        "logprobs": ("None with transformers generation", lambda v: v is None),
        "extra_fields": ("an empty dict without a rollout function", lambda v: v == {}),
        "images": ("None without images", lambda v: v is None),
        "tool_images": ("empty without tools", lambda v: not v),
    }
    for position, (name, value) in enumerate(zip(GENERATE_FIELDS, gen, strict=True)):
        meaning, holds = expected[name]
        if not holds(value):
            return (f"{LABEL}'s `_generate` now returns {_show(value)} at position {position}, where tagrpo reads "
                    f"`{name}`: {meaning}")
    return None


def _tokenized(record: StepRecord) -> str | None:
    rows, result, name = len(record.prompts), record.tokenized, "_tokenize_prompts"
    problem = arity_problem(result, TOKENIZE_FIELDS, LABEL, name)
    if problem is None and not _is_token_lists(result[0], rows):
        return f"{LABEL}'s `{name}` now returns {_show(result[0])} first; tagrpo expects {rows} lists of token ids"
    return problem


def _rewards_shape(record: StepRecord) -> str | None:
    r, f = len(record.prompts), len(record.reward_weights)
    if torch.is_tensor(record.rewards) and tuple(record.rewards.shape) == (r, f):
        return None
    return f"{LABEL}'s `_calculate_rewards` now returns {_show(record.rewards)}; tagrpo expects a ({r}, {f}) tensor"


def _step_output(record: StepRecord) -> str | None:
    out, name = record.output, "_generate_and_score_completions"
    missing = [k for k in STEP_KEYS if k not in out]
    if missing:
        return f"{LABEL}'s `{name}` no longer returns the keys {missing} (it returns {sorted(out)})"
    gen = record.generated if isinstance(record.generated, tuple) else ((), ())
    prompts = [ids[m.bool()].tolist() for ids, m in zip(out["prompt_ids"], out["prompt_mask"], strict=True)]
    if prompts != _lists(gen[0]):
        return (f"{LABEL}'s `{name}` no longer returns as `prompt_ids` the prompt tokens `_generate` returned, which "
                "is how tagrpo's anchored prompt conditions the loss")
    completions = [ids[: len(want)].tolist() for ids, want in zip(out["completion_ids"], gen[1], strict=True)]
    if completions != _lists(gen[1]) or out["completion_ids"].shape != out["completion_mask"].shape:
        return f"{LABEL}'s `{name}` no longer returns the generated completions as (R, T) `completion_ids`"
    if int(out["num_items_in_batch"]) != int(out["completion_mask"].sum()):
        return (f"{LABEL}'s `{name}` now returns a `num_items_in_batch` other than the completion mask's sum, "
                "which tagrpo recomputes for adaptive pools")
    return None


def _advantages(record: StepRecord) -> str | None:
    if _rewards_shape(record) is not None or "advantages" not in record.output:
        return None  # named by the clauses on the rewards and the output
    rewards = (record.rewards.cpu() * record.reward_weights.unsqueeze(0)).nansum(dim=1)  # (R,)
    grouped = rewards.view(-1, 1, record.group)  # (B, 1, G): a group is TRL's num_generations rows
    want = pooled_advantages(grouped, scope="pool", scale="std", eps=TRL_ADVANTAGE_EPS).view(-1)  # (R,)
    got = record.output["advantages"].detach().cpu().float()  # (R,)
    if got.shape == want.shape and torch.allclose(got, want, atol=1e-5):
        return None
    gap = (got - want).abs().max().item() if got.shape == want.shape else f"shape {tuple(got.shape)}"
    return (f"{LABEL}'s advantages are no longer (r - group mean) / (group std + {TRL_ADVANTAGE_EPS}) over groups of "
            f"`num_generations` rows (largest difference {gap}); tagrpo keeps TRL's where they equal the pooled ones")


def _logged_advantages(record: StepRecord) -> str | None:
    got, want = record.logged_advantages, record.output.get("advantages")
    if got is None or want is None or got == want.detach().cpu().tolist():
        return None  # without the buffer or the key, other clauses name it
    return (f"{LABEL}'s `_logs['advantages']` no longer ends with the step's advantages, which tagrpo replaces where "
            "it recomputes them")


def _completions_table(record: StepRecord) -> str | None:
    if record.logged_prompts != record.prompts:
        return (f"{LABEL}'s `_logs['prompt']` no longer ends with the step's prompts, which tagrpo replaces by the "
                "prompts that generated each row")
    if record.logged_extra != list(range(len(record.prompts))):
        return (f"{LABEL}'s step no longer moves the values given to `_log_completion_extra` before it into "
                "`_logs['extra']`, where tagrpo puts each row's variant")
    return None


def _metrics(record: StepRecord) -> str | None:
    train = record.metrics.get("train") if isinstance(record.metrics, dict) else None
    if isinstance(train, defaultdict) and train.default_factory is list and isinstance(train.get("reward"), list):
        return None
    return (f"{LABEL}'s `_metrics['train']` is now {_show(train)}; tagrpo appends its series to a defaultdict(list) "
            "holding TRL's (`reward`)")


def _logps(record: StepRecord) -> str | None:
    name = "_get_per_token_logps_and_entropies"
    problem = arity_problem(record.logps, LOGPS_FIELDS, LABEL, name)
    want = tuple(record.output["completion_ids"].shape) if "completion_ids" in record.output else None
    if problem is None and not (torch.is_tensor(record.logps[0]) and tuple(record.logps[0].shape) == want):
        return f"{LABEL}'s `{name}` now returns {_show(record.logps[0])} first; tagrpo expects the {want} log-probs"
    return problem


def _reference(record: StepRecord) -> str | None:
    want, got = record.reference, record.output.get("ref_per_token_logps")  # (R, T), (R, T)
    if want is None:
        return None  # beta 0: TRL computes no reference
    if got is None:
        return (f"{LABEL}'s step with beta > 0 no longer returns `ref_per_token_logps` (it returns "
                f"{sorted(record.output)})")
    if got.shape == want.shape and torch.allclose(got, want, atol=1e-5):
        return None
    return (f"{LABEL}'s `ref_per_token_logps` are no longer the reference's log-probs (the reference model, or the "
            "policy with its adapter disabled) on the step's `prompt_ids`, where tagrpo puts the anchored prompt")


def _lists(value) -> list | None:
    return [list(v) for v in value] if isinstance(value, list | tuple) else None


def _is_token_lists(value, rows: int) -> bool:
    return (isinstance(value, list) and len(value) == rows
            and all(isinstance(v, list) and all(isinstance(t, int) for t in v) for v in value))


def _show(value) -> str:
    """A short description of ``value`` for a sentence."""
    if torch.is_tensor(value):
        return f"a {tuple(value.shape)} tensor"
    if isinstance(value, list | tuple):
        return f"a {type(value).__name__} of {len(value)}" + (f" {type(value[0]).__name__}s" if value else "")
    return "None" if value is None else f"a {type(value).__name__}"
