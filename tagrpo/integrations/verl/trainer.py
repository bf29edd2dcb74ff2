"""TA-GRPO on verl: a narrow ``RayPPOTrainer`` subclass and the Ray task runner that builds it.

verl's fit loop is not copied. The subclass overrides five of its methods, each called once per step in this order:

1. ``_get_gen_batch``: the B sampled questions (each with verl's fresh uid) become B*(N+1) prompt rows
   (``expand.expand_dataproto``); verl then repeats each ``rollout.n`` times, so a pool is (N+1)*G contiguous
   rows and is never split across steps. Validation batches are not expanded.
2. ``_balance_batch`` (before verl reorders rows for data parallelism): checks that every pool is whole, logs the
   pool diagnostics and, for ``anchor=original``, rebuilds every row as ``[q0's prompt | response]``
   (``anchor.anchor_dataproto``) and drops ``rollout_log_probs``.
3. ``_compute_old_log_prob``: the same preparation when ``trainer.balance_batch=false``; for ``anchor=behavior``
   the old log-probs are computed under the generating prompt first and the rows anchored afterwards.
4. ``_update_actor``: ``actor.ppo_mini_batch_size`` counts questions, so verl is given N+1 times as many prompt
   rows per mini-batch; with ``tagrpo.record_dir`` the step's record is written here (``record.py``).
5. ``_validate``: marks validation so that step 1 leaves it alone.

Advantages come from the registered estimator ``ta_grpo`` (``advantage.py``), which reads pool and variant from
the uid. The engine's rollout correction never sees anchored rows (its log-probs are conditioned on ``q_n``).
The verl names relied on are checked when the trainer or the runner is built (``contract.py``): a renamed method,
a changed signature or a fit loop that no longer calls an override fails with a sentence naming it.
"""

from __future__ import annotations

import logging
import os
import socket

import ray
import torch
from omegaconf import OmegaConf, open_dict
from verl.trainer.main_ppo_v0 import BaseTaskRunner
from verl.trainer.ppo.ray_trainer import RayPPOTrainer

from tagrpo.core import group_diagnostics
from tagrpo.integrations.verl import advantage
from tagrpo.integrations.verl.anchor import anchor_dataproto
from tagrpo.integrations.verl.contract import enforce_verl_contract
from tagrpo.integrations.verl.expand import check_pools, expand_dataproto
from tagrpo.integrations.verl.record import generated_part, updated_part, write_record
from tagrpo.integrations.verl.settings import TAGRPOSettings, check_config, scaled_mini_batch

logger = logging.getLogger(__name__)


def pool_metrics(batch, settings: TAGRPOSettings) -> dict[str, float]:
    """``tagrpo/...`` diagnostics of a generated batch from its ``rm_scores`` (empty when verl has none yet)."""
    if "rm_scores" not in batch.batch.keys():
        return {}
    rewards = batch.batch["rm_scores"].sum(-1).float()  # (R,)
    pos, (b, v, g) = advantage.pool_layout(list(batch.non_tensor_batch["uid"]))
    grid = torch.full((b, v, g), float("nan"))  # (B, N+1, G)
    grid[pos[:, 0], pos[:, 1], pos[:, 2]] = rewards.cpu()
    return {f"tagrpo/{k}": val for k, val in group_diagnostics(grid).items()}


class TAGRPORayTrainer(RayPPOTrainer):
    """verl's ``RayPPOTrainer`` with pools of rephrasings and anchoring; configured by ``config.tagrpo``."""

    def __init__(self, *args, **kwargs):
        enforce_verl_contract()
        super().__init__(*args, **kwargs)
        self.tagrpo = TAGRPOSettings.from_config(self.config)
        check_config(self.config, self.tagrpo)
        self.tagrpo_rollouts = 0
        self._tagrpo_validating = False
        self._tagrpo_record: list[dict] = []

    # 5. validation is left as verl does it
    def _validate(self, *args, **kwargs):
        self._tagrpo_validating = True
        try:
            return super()._validate(*args, **kwargs)
        finally:
            self._tagrpo_validating = False

    # 1. expansion, in place: fit() keeps using the object it passed in
    def _get_gen_batch(self, batch):
        if not self._tagrpo_validating:
            expanded = expand_dataproto(batch, self.tagrpo.num_rephrasings, self.tagrpo.short_rephrasings)
            batch.batch, batch.non_tensor_batch = expanded.batch, expanded.non_tensor_batch
        return super()._get_gen_batch(batch)

    def _tagrpo_prepare(self, batch, metrics: dict | None) -> None:
        if self._tagrpo_validating or batch.meta_info.get("tagrpo_prepared"):
            return
        batch.meta_info["tagrpo_prepared"] = True
        rollout_n = int(self.config.actor_rollout_ref.rollout.n)
        pools = check_pools(list(batch.non_tensor_batch["uid"]), self.tagrpo.variants * rollout_n)
        self.tagrpo_rollouts += len(batch)
        if self.tagrpo.record_dir:
            self._tagrpo_record = [generated_part(batch)]
        if metrics is not None:
            metrics.update(pool_metrics(batch, self.tagrpo))
            metrics["tagrpo/rollouts"] = self.tagrpo_rollouts
            metrics["tagrpo/questions"] = len(pools)
        if self.tagrpo.anchor == "original":
            changed = anchor_dataproto(batch, self.tokenizer.pad_token_id)
            if metrics is not None:
                metrics["tagrpo/anchored_rows"] = changed

    # 2. before verl reorders the rows and counts their tokens
    def _balance_batch(self, batch, metrics, logging_prefix="global_seqlen", keep_minibatch=False):
        self._tagrpo_prepare(batch, metrics)
        return super()._balance_batch(batch, metrics, logging_prefix=logging_prefix, keep_minibatch=keep_minibatch)

    # 3. old log-probs: on q0 (original), on the generating prompt (behavior, none)
    def _compute_old_log_prob(self, batch):
        self._tagrpo_prepare(batch, None)
        if self.tagrpo.anchor != "behavior" or self._tagrpo_validating:
            return super()._compute_old_log_prob(batch)
        output = super()._compute_old_log_prob(batch)
        anchor_dataproto(batch, self.tokenizer.pad_token_id)
        return output

    # 4. mini-batches of whole pools
    def _update_actor(self, batch):
        actor = self.config.actor_rollout_ref.actor
        questions = actor.ppo_mini_batch_size
        with open_dict(self.config):
            actor.ppo_mini_batch_size = scaled_mini_batch(self.config, self.tagrpo)
        try:
            output = super()._update_actor(batch)
        finally:
            with open_dict(self.config):
                actor.ppo_mini_batch_size = questions
        if self.tagrpo.record_dir:
            parts = [*self._tagrpo_record, updated_part(batch, self.actor_rollout_wg.world_size)]
            write_record(self.tagrpo.record_dir, self.global_steps, parts)
        return output


@ray.remote
class TAGRPOTaskRunner(BaseTaskRunner):
    """verl's ``main_ppo_v0.TaskRunner`` building :class:`TAGRPORayTrainer` (the same steps, one class swapped)."""

    def run(self, config):
        from pprint import pprint

        from verl.trainer.ppo.utils import create_rl_dataset, create_rl_sampler, need_critic, need_reference_policy
        from verl.utils.config import omega_conf_to_dataclass, validate_config
        from verl.utils.dataset.rl_dataset import collate_fn
        from verl.workers.config import HFModelConfig

        enforce_verl_contract()
        advantage.register()  # this Ray actor computes the advantages
        print(f"TAGRPOTaskRunner hostname: {socket.gethostname()}, PID: {os.getpid()}")
        pprint(OmegaConf.to_container(config, resolve=True))
        OmegaConf.resolve(config)

        actor_rollout_cls, ray_worker_group_cls = self.add_actor_rollout_worker(config)
        self.add_critic_worker(config)
        self.add_reward_model_resource_pool(config)
        self.add_teacher_model_resource_pool(config)
        self.add_ref_policy_worker(config, actor_rollout_cls)
        validate_config(
            config=config, use_reference_policy=need_reference_policy(config), use_critic=need_critic(config)
        )

        model_config: HFModelConfig = omega_conf_to_dataclass(config.actor_rollout_ref.model)
        resource_pool_manager = self.init_resource_pool_mgr(config)
        datasets = {}
        for name, files, is_train in (("train", config.data.train_files, True), ("val", config.data.val_files, False)):
            datasets[name] = create_rl_dataset(
                files, config.data, model_config.tokenizer, model_config.processor, is_train=is_train,
                max_samples=config.data.get(f"{name}_max_samples", -1),
            )  # fmt: skip
        trainer = TAGRPORayTrainer(
            config=config,
            tokenizer=model_config.tokenizer,
            processor=model_config.processor,
            role_worker_mapping=self.role_worker_mapping,
            resource_pool_manager=resource_pool_manager,
            ray_worker_group_cls=ray_worker_group_cls,
            train_dataset=datasets["train"],
            val_dataset=datasets["val"],
            collate_fn=collate_fn,
            train_sampler=create_rl_sampler(config.data, datasets["train"]),
        )
        trainer.init_workers()
        trainer.fit()
