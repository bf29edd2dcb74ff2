"""The TA-GRPO trainer's hooks on verl's RayPPOTrainer, one fit() step's data flow, and the entry point (no Ray)."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("verl")
pytest.importorskip("verl.trainer.ppo.ray_trainer")

from omegaconf import OmegaConf  # noqa: E402
from verl import DataProto  # noqa: E402
from verl.trainer.config import AlgoConfig  # noqa: E402
from verl.trainer.ppo.ray_trainer import RayPPOTrainer, compute_advantage  # noqa: E402
from verl.utils.model import compute_position_id_with_mask  # noqa: E402
from verl_helpers import CONFIG_DIR, PAD, generated, make_dataset, pool_uids, question_batch  # noqa: E402

from tagrpo.integrations.verl import advantage  # noqa: E402
from tagrpo.integrations.verl.anchor import anchor_dataproto  # noqa: E402
from tagrpo.integrations.verl.expand import split_uid  # noqa: E402
from tagrpo.integrations.verl.settings import TAGRPOSettings  # noqa: E402
from tagrpo.integrations.verl.trainer import TAGRPORayTrainer  # noqa: E402


@pytest.fixture
def dataset(tmp_path):
    return make_dataset(tmp_path)


# ---- the trainer's hooks, without Ray ------------------------------------------------------------------------------
class _Tok:
    pad_token_id = PAD


def _trainer(anchor="original", n=2, num_rephrasings=3, mini=2):
    trainer = object.__new__(TAGRPORayTrainer)
    trainer.config = OmegaConf.create(
        {"tagrpo": {"num_rephrasings": num_rephrasings, "anchor": anchor},
         "actor_rollout_ref": {"rollout": {"n": n}, "actor": {"ppo_mini_batch_size": mini}},
         "algorithm": {"adv_estimator": "ta_grpo"}, "trainer": {"use_v1": False}}
    )  # fmt: skip
    trainer.tagrpo = TAGRPOSettings.from_config(trainer.config)
    trainer.tokenizer, trainer.tagrpo_rollouts, trainer._tagrpo_validating = _Tok(), 0, False
    return trainer


def test_trainer_expands_in_place_but_not_in_validation(dataset, monkeypatch):
    trainer = _trainer()
    batch = question_batch(dataset, 2)
    gen_batch = trainer._get_gen_batch(batch)  # what fit() does right after assigning the uids
    assert len(batch) == 8 and len(gen_batch) == 8 and "raw_prompt" in gen_batch.non_tensor_batch
    assert list(batch.non_tensor_batch["uid"][:4]) == [f"u0#v{n}" for n in range(4)]
    monkeypatch.setattr(RayPPOTrainer, "_validate", lambda self: len(self._get_gen_batch(question_batch(dataset, 2))))
    assert trainer._validate() == 2 and not trainer._tagrpo_validating


@pytest.mark.parametrize("anchor", ["original", "none", "behavior"])
def test_trainer_anchors_before_balancing_and_old_log_probs(anchor, monkeypatch):
    seen = {}
    monkeypatch.setattr(
        RayPPOTrainer, "_balance_batch", lambda self, b, m, **kw: seen.setdefault("bal", b.batch.clone())
    )
    monkeypatch.setattr(RayPPOTrainer, "_compute_old_log_prob", lambda self, b: seen.setdefault("old", b.batch.clone()))
    trainer, metrics = _trainer(anchor), {}
    batch, _ = generated(pool_uids(samples=2))
    original = batch.batch.clone()
    trainer._balance_batch(batch, metrics)
    trainer._compute_old_log_prob(batch)
    anchored = original["input_ids"]
    if anchor != "none":
        reference, _ = generated(pool_uids(samples=2))
        anchor_dataproto(reference, PAD)
        anchored = reference.batch["input_ids"]
    assert torch.equal(seen["bal"]["input_ids"], anchored if anchor == "original" else original["input_ids"])
    assert torch.equal(seen["old"]["input_ids"], anchored if anchor == "original" else original["input_ids"])
    assert torch.equal(batch.batch["input_ids"], anchored)  # behavior: anchored after the old log-probs
    assert metrics["tagrpo/rollouts"] == 24 and metrics["tagrpo/questions"] == 3
    assert 0.0 <= metrics["tagrpo/pool/zero_std"] <= 1.0 and "tagrpo/reward/variant_3" in metrics


def test_trainer_rejects_split_pools_and_scales_mini_batches(monkeypatch):
    trainer = _trainer()
    batch, _ = generated(pool_uids(samples=2)[:-1])
    with pytest.raises(ValueError, match="not whole"):
        trainer._balance_batch(batch, {})
    monkeypatch.setattr(
        RayPPOTrainer, "_update_actor", lambda self, b: self.config.actor_rollout_ref.actor.ppo_mini_batch_size
    )
    assert trainer._update_actor(None) == 8 and trainer.config.actor_rollout_ref.actor.ppo_mini_batch_size == 2


def test_one_step_of_the_fit_loop_without_ray(dataset, monkeypatch):
    """fit()'s data flow around the hooks: expand, repeat, generate, union, balance (reorder), advantages."""
    from verl.trainer.ppo.ray_trainer import compute_response_mask

    from tagrpo.core import pooled_advantages

    tok, n, p, t = dataset.tokenizer, 2, 64, 5
    monkeypatch.setattr(RayPPOTrainer, "_balance_batch", lambda self, b, m, **kw: b.reorder(torch.randperm(len(b))))
    trainer = _trainer(n=n)
    batch = question_batch(dataset)
    gen_batch = trainer._get_gen_batch(batch).repeat(repeat_times=n, interleave=True)
    prompt_ids = [tok(tok.apply_chat_template(m, add_generation_prompt=True, tokenize=False))["input_ids"]
                  for m in gen_batch.non_tensor_batch["raw_prompt"]]  # fmt: skip
    prompts = torch.stack([torch.tensor([PAD] * (p - len(ids)) + ids) for ids in prompt_ids])
    responses = torch.randint(10, 90, (len(prompts), t))
    attention = torch.cat([(prompts != PAD).long(), torch.ones_like(responses)], 1)
    rewards = torch.randint(0, 2, (len(prompts),)).float()
    scores = torch.zeros(len(prompts), t)
    scores[:, -1] = rewards
    gen_out = DataProto.from_single_dict(
        {"prompts": prompts, "responses": responses, "attention_mask": attention, "rm_scores": scores,
         "input_ids": torch.cat([prompts, responses], 1), "position_ids": compute_position_id_with_mask(attention)}
    )  # fmt: skip
    gen_out.non_tensor_batch["uid"] = gen_batch.non_tensor_batch["uid"]
    step = batch.repeat(repeat_times=n, interleave=True).union(gen_out)
    step.batch["response_mask"] = compute_response_mask(step)
    metrics = {}
    trainer._balance_batch(step, metrics=metrics)
    assert metrics["tagrpo/rollouts"] == 4 * 4 * n and metrics["tagrpo/questions"] == 4
    uids = list(step.non_tensor_batch["uid"])
    for r, uid in enumerate(uids):  # every row now reads q0's prompt
        q0_row = next(i for i, u in enumerate(gen_batch.non_tensor_batch["uid"]) if u == split_uid(uid)[0] + "#v0")
        assert torch.equal(step.batch["prompts"][r], prompts[q0_row])
    step.batch["token_level_rewards"] = step.batch.pop("rm_scores")
    out = compute_advantage(step, adv_estimator="ta_grpo", config=AlgoConfig(adv_estimator="ta_grpo"))
    pos, shape = advantage.pool_layout(uids)
    grid = torch.full(shape, float("nan"))
    grid[pos[:, 0], pos[:, 1], pos[:, 2]] = step.batch["token_level_rewards"][:, -1]
    expected = pooled_advantages(grid, eps=1e-6)[pos[:, 0], pos[:, 1], pos[:, 2]]
    torch.testing.assert_close(out.batch["advantages"][:, -1], expected)


def test_entry_point_composes_checks_and_hands_verl_our_task_runner(tmp_path, monkeypatch, capsys):
    import sys

    import verl.trainer.main_ppo as main_ppo

    from tagrpo.integrations.verl import main as entry
    from tagrpo.integrations.verl.trainer import TAGRPOTaskRunner

    calls = []
    monkeypatch.setattr(
        main_ppo, "run_ppo", lambda config, task_runner_class: calls.append((config, task_runner_class))
    )
    monkeypatch.chdir(tmp_path)  # Hydra writes its run folder here
    argv = ["main", "--config-path", str(CONFIG_DIR), "--config-name", "tagrpo", "tagrpo_method=grpo"]
    monkeypatch.setattr(sys, "argv", argv)
    entry.main()
    ((config, runner),) = calls
    assert runner is TAGRPOTaskRunner and config.tagrpo.num_rephrasings == 0 and config.data.train_batch_size == 256
    monkeypatch.setattr(sys, "argv", [*argv, "trainer.use_v1=true"])
    with pytest.raises(SystemExit):  # Hydra prints the error and exits
        entry.main()
    assert "set trainer.use_v1=false" in capsys.readouterr().err and len(calls) == 1
