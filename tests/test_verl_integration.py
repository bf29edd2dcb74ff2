"""The verl add-on against verl itself (skipped without verl: ``pip install verl==0.9.1`` in its own env)."""

from __future__ import annotations

import os
import random

import numpy as np
import pytest
import torch

verl = pytest.importorskip("verl")
pytest.importorskip("verl.trainer.ppo.ray_trainer")  # verl's trainer needs its undeclared extras too

from omegaconf import OmegaConf  # noqa: E402
from verl import DataProto  # noqa: E402
from verl.trainer.config import AlgoConfig  # noqa: E402
from verl.trainer.ppo import core_algos  # noqa: E402
from verl.trainer.ppo.ray_trainer import compute_advantage  # noqa: E402
from verl.utils.model import compute_position_id_with_mask  # noqa: E402
from verl.workers.utils.padding import left_right_2_no_padding  # noqa: E402
from verl_helpers import CONFIG_DIR, PAD, generated, make_dataset, pool_uids, question_batch  # noqa: E402

from tagrpo.integrations.verl import advantage  # noqa: E402
from tagrpo.integrations.verl.anchor import anchor_dataproto  # noqa: E402
from tagrpo.integrations.verl.expand import check_pools, expand_dataproto, split_uid, variant_uid  # noqa: E402
from tagrpo.integrations.verl.settings import TAGRPOSettings, check_config  # noqa: E402


def _advantages(estimator, rewards, uids, norm=True):
    """verl's own dispatch (ray_trainer.compute_advantage) on outcome rewards at each row's last token."""
    r, t = len(rewards), 5
    lengths = torch.randint(1, t + 1, (r,), generator=torch.Generator().manual_seed(r))
    mask = (torch.arange(t)[None] < lengths[:, None]).float()
    scores = torch.zeros(r, t)
    scores[torch.arange(r), lengths - 1] = torch.as_tensor(rewards, dtype=torch.float32)
    data = DataProto.from_single_dict({"token_level_rewards": scores, "response_mask": mask})
    data.non_tensor_batch["uid"] = np.array(uids, dtype=object)
    config = AlgoConfig(adv_estimator=estimator, norm_adv_by_std_in_grpo=norm)
    out = compute_advantage(data, adv_estimator=estimator, norm_adv_by_std_in_grpo=norm, config=config)
    return out.batch["advantages"]


def _random_pools(seed, questions=4, variants=4, samples=3, binary=True):
    rng = random.Random(seed)
    rows = [(f"uid-{b}", n) for b in range(questions) for n in range(variants) for _ in range(samples)]
    rng.shuffle(rows)
    rewards = [float(rng.random() < 0.4) if binary else rng.random() for _ in rows]
    return rows, rewards


def test_estimators_are_registered():
    assert core_algos.get_adv_estimator_fn("ta_grpo") is advantage.compute_ta_grpo_advantage
    assert core_algos.get_adv_estimator_fn("ta_grpo_variant") is advantage.compute_ta_grpo_variant_advantage
    assert advantage.register()  # idempotent


@pytest.mark.parametrize("binary", [True, False])
@pytest.mark.parametrize("norm", [True, False])
@pytest.mark.parametrize("seed", range(3))
def test_ta_grpo_equals_stock_grpo(seed, norm, binary):
    rows, rewards = _random_pools(seed, binary=binary)
    pooled = [q for q, _ in rows]  # the official code's scheme: one shared uid per pool
    expanded = [variant_uid(q, n) for q, n in rows]  # our trainer's scheme
    grpo_pool = _advantages("grpo", rewards, pooled, norm)
    torch.testing.assert_close(_advantages("ta_grpo", rewards, pooled, norm), grpo_pool, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(_advantages("ta_grpo", rewards, expanded, norm), grpo_pool, atol=1e-5, rtol=1e-5)
    grpo_variant = _advantages("grpo", rewards, expanded, norm)
    torch.testing.assert_close(
        _advantages("ta_grpo_variant", rewards, expanded, norm), grpo_variant, atol=1e-5, rtol=1e-5
    )


# ---- data: converter -> RLHFDataset -> expansion ---------------------------------------------------------------
@pytest.fixture
def dataset(tmp_path):
    return make_dataset(tmp_path)


def test_converted_parquet_loads_with_rlhf_dataset(dataset):
    assert len(dataset) == 4
    item = dataset[1]
    assert item["raw_prompt"] == [{"role": "user", "content": "Q1 v0: what is 1+1?"}]
    assert item["reward_model"]["ground_truth"] == "2" and item["data_source"] == "tagrpo/math"
    assert item["extra_info"]["original_id"] == "q1" and item["index"] == 1
    assert [m[0]["content"] for m in item["extra_info"]["rephrasings"]] == [f"Q1 v{n}: add 1 and 1" for n in (1, 2, 3)]


def test_expansion_keeps_pools_whole(dataset):
    batch = question_batch(dataset)
    expanded = expand_dataproto(batch, num_rephrasings=3)
    assert len(expanded) == 16 and expanded.batch["dummy_tensor"].shape[0] == 16
    prompts = [m[0]["content"] for m in expanded.non_tensor_batch["raw_prompt"]]
    assert prompts[:4] == ["Q0 v0: what is 0+1?", "Q0 v1: add 0 and 1", "Q0 v2: add 0 and 1", "Q0 v3: add 0 and 1"]
    assert prompts[8:12] == ["Q2 v0: what is 2+1?", "Q2 v1: add 2 and 1", "Q2 v0: what is 2+1?", "Q2 v0: what is 2+1?"]
    assert list(expanded.non_tensor_batch["tagrpo_variant"]) == [0, 1, 2, 3] * 4
    assert list(expanded.non_tensor_batch["tagrpo_qid"][::4]) == ["q0", "q1", "q2", "q3"]
    rolled = expanded.repeat(repeat_times=8, interleave=True)  # verl's rollout.n repeat
    uids = list(rolled.non_tensor_batch["uid"])
    for b in range(4):  # (N+1)*G contiguous rows per question, variant-major
        assert [split_uid(u) for u in uids[b * 32 : (b + 1) * 32]] == [(f"u{b}", n) for n in range(4) for _ in range(8)]
    rolled.reorder(torch.randperm(len(rolled)))  # batch balancing or shuffling cannot split a pool
    assert len(check_pools(list(rolled.non_tensor_batch["uid"]), pool_size=32)) == 4


# ---- anchoring on a generated batch in verl's layout -------------------------------------------------------------
def test_anchoring_gives_q0_prompt_then_the_unchanged_response():
    uids = pool_uids()
    batch, tokens_of = generated(uids)
    before = batch.batch.clone()
    changed = anchor_dataproto(batch, PAD)
    assert changed == sum(split_uid(u)[1] != 0 for u in uids)
    td = batch.batch
    for r, uid in enumerate(uids):
        q0 = tokens_of[(split_uid(uid)[0], 0)]
        expected_prompt = torch.cat([torch.full((6 - len(q0),), PAD), q0])
        assert torch.equal(td["prompts"][r], expected_prompt)
        assert torch.equal(td["input_ids"][r], torch.cat([expected_prompt, before["responses"][r]]))
        assert torch.equal(td["attention_mask"][r, :6], (expected_prompt != PAD).long())
        assert torch.equal(td["attention_mask"][r, 6:], before["attention_mask"][r, 6:])
    assert torch.equal(td["position_ids"], compute_position_id_with_mask(td["attention_mask"]))
    for key in ("responses", "response_mask", "rm_scores"):
        assert torch.equal(td[key], before[key])
    assert "rollout_log_probs" not in td.keys()
    assert anchor_dataproto(batch, PAD) == 0  # idempotent
    nested = left_right_2_no_padding(batch.to_tensordict())  # what the actor's log-prob pass consumes
    for r, uid in enumerate(uids):
        q0, used = tokens_of[(split_uid(uid)[0], 0)], int(before["response_mask"][r].sum())
        assert torch.equal(nested["input_ids"][r], torch.cat([q0, before["responses"][r, :used]]))
        assert torch.equal(nested["position_ids"][r], torch.arange(len(q0) + used))


# ---- the example configurations ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "model, method, expect",
    [("qwen3_1.7b", "ta_grpo", (3, 64, 32, 8)), ("qwen3_4b", "grpo", (0, 256, 128, 8)),
     ("llama3.2_1b", "equal_sampling", (0, 64, 32, 32)), ("llama3.2_3b", "ta_grpo", (3, 64, 32, 8))],
)  # fmt: skip
@pytest.mark.filterwarnings("ignore:Disabled critic")
def test_example_configs_compose_on_verl_and_validate(model, method, expect):
    from hydra import compose, initialize_config_dir
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import omega_conf_to_dataclass, validate_config

    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base=None):
        cfg = compose(config_name="tagrpo", overrides=[f"tagrpo_model={model}", f"tagrpo_method={method}"])
    OmegaConf.resolve(cfg)
    settings = TAGRPOSettings.from_config(cfg)
    actor = cfg.actor_rollout_ref.actor
    got = (
        settings.num_rephrasings,
        cfg.data.train_batch_size,
        actor.ppo_mini_batch_size,
        cfg.actor_rollout_ref.rollout.n,
    )
    assert got == expect
    assert (cfg.algorithm.adv_estimator, settings.anchor, cfg.trainer.use_v1) == ("ta_grpo", "original", False)
    assert (actor.optim.lr, actor.clip_ratio_low, actor.clip_ratio_high, actor.kl_loss_coef) == (1e-6, 0.2, 0.2, 0.001)
    assert (actor.use_kl_loss, actor.kl_loss_type, cfg.data.max_response_length) == (True, "low_var_kl", 3072)
    assert cfg.trainer.experiment_name == f"{method}_{model}" and cfg.trainer.total_epochs == 2
    # rollouts per step are equal across methods: questions x (N+1) x G
    assert cfg.data.train_batch_size * settings.variants * cfg.actor_rollout_ref.rollout.n == 2048
    validate_config(config=cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))
    assert check_config(cfg, settings) == []
    omega_conf_to_dataclass(cfg.actor_rollout_ref.actor)
    omega_conf_to_dataclass(cfg.actor_rollout_ref.rollout)
    assert os.path.isfile(CONFIG_DIR / "tagrpo_model" / f"{model}.yaml")


def test_reward_function_runs_in_verls_reward_manager():
    from verl.experimental.reward_loop.reward_manager.naive import NaiveRewardManager
    from verl.trainer.ppo.reward import get_custom_reward_fn

    from tagrpo.toy import build_char_tokenizer

    path = {"path": "pkg://tagrpo.integrations.verl.reward", "name": "compute_score"}
    config = OmegaConf.create({"reward": {"custom_reward_function": path}})
    tok = build_char_tokenizer()
    manager = NaiveRewardManager(config, tok, get_custom_reward_fn(config))

    def score(text, gold):
        ids = torch.tensor(tok(text, add_special_tokens=False)["input_ids"])
        item = DataProto.from_single_dict(
            {"responses": ids[None], "attention_mask": torch.ones(1, 3 + len(ids), dtype=torch.long)}
        )
        item.non_tensor_batch.update(
            {"data_source": np.array(["tagrpo/math"], dtype=object), "extra_info": np.array([{}], dtype=object),
             "reward_model": np.array([{"style": "rule", "ground_truth": gold}], dtype=object)}
        )  # fmt: skip
        return manager.loop.run_until_complete(manager.run_single(item))["reward_score"]

    assert score("so the answer is \\boxed{12}", "12") == 1.0
    assert score("so the answer is \\boxed{13}", "12") == 0.0
