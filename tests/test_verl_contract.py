"""The verl contract (tagrpo.integrations.verl.contract): it holds for the installed verl, and its clauses fail
with a sentence naming what changed on a changed copy. Runs in the verl environment (``make test-verl``)."""

from __future__ import annotations

import pytest

pytest.importorskip("verl")

from verl.trainer.main_ppo_v0 import BaseTaskRunner  # noqa: E402
from verl.trainer.ppo import core_algos  # noqa: E402
from verl.trainer.ppo.ray_trainer import RayPPOTrainer  # noqa: E402

from tagrpo.common.contracts import problems  # noqa: E402
from tagrpo.integrations.verl.contract import (  # noqa: E402
    enforce_verl_contract,
    estimator_clauses,
    runner_clauses,
    trainer_clauses,
)


def test_installed_verl_holds_the_contract():
    clauses = trainer_clauses(RayPPOTrainer) + runner_clauses(BaseTaskRunner) + estimator_clauses(core_algos)
    broken = problems(clauses)
    assert not broken, "\n".join(broken)
    enforce_verl_contract()


class _Changed(RayPPOTrainer):
    """A verl whose fit loop no longer balances the batch and whose actor update takes the batch by another name."""

    def _update_actor(self, data):
        return data

    def fit(self):
        gen_batch = self._get_gen_batch(batch)  # noqa: F821
        self._compute_old_log_prob(batch)  # noqa: F821
        self._update_actor(batch)  # noqa: F821
        return self._validate(), gen_batch


def test_changed_verl_fails_naming_what_changed():
    assert problems(trainer_clauses(_Changed)) == [
        "verl's RayPPOTrainer's `_update_actor` now takes (data); tagrpo calls it with (batch)",
        "verl's RayPPOTrainer's `fit` no longer contains `self._balance_batch(batch` (the calls to the methods "
        "TAGRPORayTrainer overrides)",
    ]


def test_a_removed_estimator_registry_is_named():
    class Bare:
        def compute_grpo_outcome_advantage(token_level_rewards, response_mask, index, epsilon, config):
            return None

    assert problems(estimator_clauses(Bare)) == [
        "verl.trainer.ppo.core_algos no longer has `ADV_ESTIMATOR_REGISTRY`",
        "verl.trainer.ppo.core_algos's `compute_grpo_outcome_advantage` now takes (token_level_rewards, "
        "response_mask, index, epsilon, config); tagrpo calls it with (token_level_rewards, response_mask, index, "
        "epsilon, norm_adv_by_std_in_grpo, config)",
    ]
