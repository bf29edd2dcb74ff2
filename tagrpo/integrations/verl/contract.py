"""What TAGRPORayTrainer and TAGRPOTaskRunner rely on in verl, checked when they are built
(``tagrpo.common.contracts``).

The five ``RayPPOTrainer`` methods the subclass overrides, with the arguments it passes, and the calls to them in
verl's ``fit`` (an override verl no longer calls is dead); the task runner's builder methods; the advantage
estimator registry and the signature verl calls an estimator with. ``tests/test_verl_contract.py`` (the verl
environment, ``make test-verl``) runs them against the installed verl and on a changed copy.
"""

from __future__ import annotations

from tagrpo.common.contracts import Clause, attribute, enforce, mentions, method

LABEL = "verl's RayPPOTrainer"
RUNNER = "verl's main_ppo_v0.BaseTaskRunner"
FIT_CALLS = ("self._get_gen_batch(batch)", "self._balance_batch(batch", "self._compute_old_log_prob(batch)",
             "self._update_actor(batch)", "self._validate()")  # fmt: skip
ESTIMATOR_PARAMS = ("token_level_rewards", "response_mask", "index", "epsilon", "norm_adv_by_std_in_grpo", "config")


def trainer_clauses(owner: type) -> list[Clause]:
    """The clauses about ``RayPPOTrainer`` (``owner``, replaceable for the tests)."""
    return [
        method(owner, "_get_gen_batch", ("batch",), LABEL),
        method(owner, "_validate", (), LABEL),
        method(owner, "_balance_batch", ("batch", "metrics", "logging_prefix", "keep_minibatch"), LABEL),
        method(owner, "_compute_old_log_prob", ("batch",), LABEL),
        method(owner, "_update_actor", ("batch",), LABEL),
        mentions(owner, "fit", FIT_CALLS, LABEL, "the calls to the methods TAGRPORayTrainer overrides"),
        mentions(owner, "_get_gen_batch", ['"uid"'], LABEL, "the question ids the pools are built from"),
    ]


def runner_clauses(owner: type) -> list[Clause]:
    """The clauses about the task runner's builders that ``TAGRPOTaskRunner.run`` calls."""
    return [
        method(owner, "add_actor_rollout_worker", ("config",), RUNNER),
        method(owner, "add_critic_worker", ("config",), RUNNER),
        method(owner, "add_reward_model_resource_pool", ("config",), RUNNER),
        method(owner, "add_teacher_model_resource_pool", ("config",), RUNNER),
        method(owner, "add_ref_policy_worker", ("config", "ref_policy_cls"), RUNNER),
        method(owner, "init_resource_pool_mgr", ("config",), RUNNER),
    ]


def estimator_clauses(core_algos) -> list[Clause]:
    """The registry ``ta_grpo`` registers into, and the parameters verl passes to an estimator (GRPO's)."""
    label = "verl.trainer.ppo.core_algos"
    return [
        attribute(core_algos, "ADV_ESTIMATOR_REGISTRY", label, dict),
        method(core_algos, "compute_grpo_outcome_advantage", ESTIMATOR_PARAMS, label),
    ]


def enforce_verl_contract() -> None:
    """Raise ``tagrpo.common.contracts.ContractError`` naming every relied-on verl name that changed."""
    import verl
    from verl.trainer.main_ppo_v0 import BaseTaskRunner
    from verl.trainer.ppo import core_algos
    from verl.trainer.ppo.ray_trainer import RayPPOTrainer

    clauses = trainer_clauses(RayPPOTrainer) + runner_clauses(BaseTaskRunner) + estimator_clauses(core_algos)
    enforce(clauses, "verl", getattr(verl, "__version__", "unknown"), "TAGRPORayTrainer")
