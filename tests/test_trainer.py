"""TAGRPOTrainer on tiny random Qwen3 and Llama models, on CPU: what must have happened in a step."""

from __future__ import annotations

import json
import math
import re
import zlib

import pytest
import torch
from conftest import pool_rows
from trainer_utils import hash_reward, make_config, make_trainer, spy, trl_trainer

from tagrpo.core import pooled_advantages, shaped_advantages

PROMPT = re.compile(r"Q(\d+) v(\d+):")


def _decode_prompts(trainer, ids, mask=None):
    out = []
    for r, row in enumerate(ids):
        row = torch.as_tensor(row)
        if mask is not None:
            row = row[mask[r].bool()]
        out.append(trainer.processing_class.decode(row.tolist()))
    return out


@pytest.mark.parametrize("arch", ["qwen3", "llama"])
def test_steps_run_loss_finite_and_parameters_move(model_dirs, tmp_path, arch):
    trainer = make_trainer(model_dirs[arch], pool_rows(), tmp_path, beta=0.01)
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    assert len(losses) == 2 and all(math.isfinite(v) for v in losses)
    moved = [n for n, p in trainer.model.named_parameters() if not torch.equal(before[n], p.detach())]
    assert len(moved) == len(before)
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in records if "tagrpo/rollouts" in r]
    assert [r["tagrpo/rollouts"] for r in steps] == [16.0, 32.0]  # 2 questions x (3+1) x 2 per step
    for key in (
        "tagrpo/pool/zero_std",
        "tagrpo/original/zero_std",
        "tagrpo/rescued",
        "tagrpo/reward/variant_3",
    ):
        assert key in steps[0]
    assert steps[1]["tagrpo/tokens_per_s"] > 0


@pytest.mark.parametrize("anchor", ["original", "none", "behavior"])
def test_rows_generated_from_their_variant_and_loss_conditioned_as_anchor_says(model_dirs, tmp_path, anchor):
    trainer = make_trainer(model_dirs["qwen3"], pool_rows(), tmp_path, anchor=anchor, max_steps=1)
    generated, losses = [], []
    spy(trainer, "_generate_single_turn", generated)
    original_loss = trainer._compute_loss

    def loss_spy(model, inputs):
        with torch.no_grad():
            logps, _, _ = trainer._get_per_token_logps_and_entropies(
                model,
                torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], 1),
                torch.cat([inputs["prompt_mask"], inputs["completion_mask"]], 1),
                inputs["completion_ids"].size(1),
            )
        losses.append((inputs, logps))
        return original_loss(model, inputs)

    trainer._compute_loss = loss_spy
    trainer.train()

    # Generation: row j of a pool comes from variant j // G of its question.
    ((gen_args, _, _),) = generated
    gen_prompts = _decode_prompts(trainer, gen_args[0])
    assert len(gen_prompts) == 16
    for j, text in enumerate(gen_prompts):
        assert int(PROMPT.match(text).group(2)) == (j % 8) // 2, text
    assert len({PROMPT.match(t).group(1) for t in gen_prompts[:8]}) == 1

    # Loss: the prompt tokens are q0's (original, behavior) or the generating prompt's (none).
    seen_variants = set()
    for inputs, logps in losses:
        texts = _decode_prompts(trainer, inputs["prompt_ids"], inputs["prompt_mask"])
        for text, n in zip(texts, inputs["variant_index"].tolist(), strict=True):
            conditioned = int(PROMPT.match(text).group(2))
            assert conditioned == (n if anchor == "none" else 0), (anchor, n, text)
            seen_variants.add(n)
        old = inputs.get("old_per_token_logps")
        mask = inputs["completion_mask"].bool()
        if anchor == "behavior":
            # Old log-probs under the generating prompt: equal to the q0-conditioned ones on q0's rows only.
            on_q0 = inputs["variant_index"] == 0
            assert torch.allclose(old[on_q0][mask[on_q0]], logps[on_q0][mask[on_q0]], atol=1e-5)
            assert not torch.allclose(old[~on_q0][mask[~on_q0]], logps[~on_q0][mask[~on_q0]], atol=1e-3)
        else:
            assert old is None  # one pass per rollout batch: TRL uses the current log-probs, ratio 1
    assert seen_variants == {0, 1, 2, 3}


def _step_advantages(trainer):
    rewards, outputs = [], []
    spy(trainer, "_calculate_rewards", rewards)
    spy(trainer, "_generate_and_score_completions", outputs)
    trainer.train()
    per_func = rewards[0][2]  # (R, 1)
    return per_func[:, 0], outputs[0][2]["advantages"]


def test_uniform_original_inside_mixed_pool_gets_nonzero_advantage(model_dirs, tmp_path):
    def reward(completions, **kwargs):  # rows 0..G-1 of each pool (q0) all right, neighbours alternate
        return [1.0 if j % 8 < 2 else float(j % 2) for j in range(len(completions))]

    _, adv_pool = _step_advantages(make_trainer(model_dirs["qwen3"], pool_rows(), tmp_path / "p", reward, max_steps=1))
    _, adv_var = _step_advantages(
        make_trainer(model_dirs["qwen3"], pool_rows(), tmp_path / "v", reward, max_steps=1, advantage_scope="variant")
    )
    q0_rows = torch.tensor([j % 8 < 2 for j in range(16)])
    assert (adv_pool[q0_rows] > 0.5).all()
    assert (adv_var[q0_rows] == 0).all()


@pytest.mark.parametrize("scope", ["pool", "variant"])
def test_trainer_advantages_come_from_core(model_dirs, tmp_path, scope):
    trainer = make_trainer(model_dirs["qwen3"], pool_rows(), tmp_path, max_steps=1, advantage_scope=scope)
    rewards, advantages = _step_advantages(trainer)
    expected = pooled_advantages(rewards.view(2, 4, 2), scope=scope, eps=1e-4).view(-1)
    torch.testing.assert_close(advantages, expected, rtol=0, atol=1e-6)


def test_gated_pools_and_rephrased_weight_reach_the_loss(model_dirs, tmp_path):
    def reward(completions, **kwargs):  # pool 0: q0 all wrong (gate open); pool 1: q0 mixed (closed)
        out = []
        for j in range(len(completions)):
            pool, p = divmod(j, 8)
            out.append(float(p % 2 == 0) if p < 2 and pool % 2 else 0.0 if p < 2 else float(p % 2))
        return out

    trainer = make_trainer(model_dirs["qwen3"], pool_rows(), tmp_path, reward, max_steps=1,
                           pool_gate="q0_all_wrong", rephrased_weight=0.5)
    rewards, advantages = _step_advantages(trainer)
    grouped = advantages.view(2, 4, 2)  # (B, N+1, G)
    expected = shaped_advantages(rewards.view(2, 4, 2), eps=1e-4, gate="q0_all_wrong", rephrased_weight=0.5)
    torch.testing.assert_close(grouped, expected, rtol=0, atol=1e-6)
    # by hand: pool 0 [0, 0 | 0, 1, 0, 1, 0, 1]: mean 3/8, unbiased std sqrt(15/56); rephrased rows halved
    std = math.sqrt(15 / 56) + 1e-4
    torch.testing.assert_close(grouped[0, 1], torch.tensor([0.5 * (-3 / 8) / std, 0.5 * (5 / 8) / std]))
    # pool 1: q0 [1, 0] normalised alone (std sqrt(0.5)), its rephrasings silent
    q0 = 0.5 / (math.sqrt(0.5) + 1e-4)
    torch.testing.assert_close(grouped[1, 0], torch.tensor([q0, -q0]))
    assert torch.equal(grouped[1, 1:], torch.zeros(3, 2))


def test_equal_sampling_baseline_is_a_configuration(model_dirs, tmp_path):
    trainer = make_trainer(
        model_dirs["qwen3"], pool_rows(), tmp_path, num_rephrasings=0, num_generations=8, max_steps=1
    )
    generated = []
    spy(trainer, "_generate_single_turn", generated)
    trainer.train()
    texts = _decode_prompts(trainer, generated[0][0][0])
    assert len(texts) == 16 and all(PROMPT.match(t).group(2) == "0" for t in texts)
    assert trainer.rollouts == 16


def test_bad_input_fails_before_training(model_dirs, tmp_path):
    rows = pool_rows()
    rows[2]["rephrasings"] = rows[2]["rephrasings"][:1]
    with pytest.raises(ValueError, match=r"^train dataset row 3 \(id 'q2'\): field 'rephrasings' has 1 entries, "
                                         r"num_rephrasings=3 \(apply tagrpo.data.fit_rephrasings first\)$"):
        make_trainer(model_dirs["qwen3"], rows, tmp_path)
    with pytest.raises(ValueError, match=r"anchor='foo' is not valid; expected one of: 'original', 'none', 'behavior'"):
        make_config(tmp_path, anchor="foo")
    with pytest.raises(ValueError, match="must hold whole pools of"):
        make_config(tmp_path, per_device_train_batch_size=4, gradient_accumulation_steps=1)
    with pytest.raises(TypeError, match="TAGRPOConfig"):
        from trl import GRPOConfig

        from tagrpo.trainer import TAGRPOTrainer

        TAGRPOTrainer(model_dirs["qwen3"], [hash_reward], args=GRPOConfig(output_dir=str(tmp_path), use_cpu=True))
    with pytest.raises(ValueError, match=r"^pool_mode='history' needs tagrpo.trainer.adaptive.AdaptiveTAGRPOTrainer "
                                         r"\(tagrpo.trainer.run.trainer_class picks it from the config\); "
                                         r"TAGRPOTrainer trains full pools$"):
        TAGRPOTrainer(model_dirs["qwen3"], [hash_reward], args=make_config(tmp_path, pool_mode="history"))


def test_pool_split_is_detected():
    from tagrpo.trainer.trainer import _check_pools

    _check_pools(["a"] * 4 + ["b"] * 4, 4)
    with pytest.raises(RuntimeError, match="mixes questions"):
        _check_pools(["a"] * 3 + ["b"] * 5, 4)
    with pytest.raises(RuntimeError, match="whole pools"):
        _check_pools(["a"] * 6, 4)


def test_grpo_trainer_is_untouched_by_dataset_extras(model_dirs, tmp_path):
    """The rows TA-GRPO trains on also train plain TRL: it generates from q0 only, and its reward sees every
    column of the row (``rephrasings`` and ``id`` included) beside the completions."""
    seen = []

    def recording_reward(completions, prompts, **kwargs):
        seen.append((prompts, kwargs))
        return hash_reward(completions)

    trainer = trl_trainer(model_dirs["qwen3"], tmp_path, reward=recording_reward, num_generations=4,
                          max_completion_length=4)
    trainer.train()
    assert trainer.state.global_step == 1 and len(seen) == 1
    prompts, columns = seen[0]
    assert len(prompts) == 16 and all(PROMPT.match(p).group(2) == "0" for p in prompts)  # q0 only
    by_id = {r["id"]: r for r in pool_rows(num_questions=8)}
    assert len(columns["id"]) == 16
    for p, qid, answer, rephrasings in zip(
        prompts, columns["id"], columns["answer"], columns["rephrasings"], strict=True
    ):
        assert (p, answer, rephrasings) == (by_id[qid]["prompt"], by_id[qid]["answer"], by_id[qid]["rephrasings"])


def test_unscorable_rows_get_advantage_zero_and_are_counted(model_dirs, tmp_path):
    def quarter_unscorable(completions, **kwargs):  # every 4th row: no score (a dead verifier, say)
        return [None if i % 4 == 0 else float(zlib.crc32(c.encode()) % 2) for i, c in enumerate(completions)]

    trainer = make_trainer(model_dirs["qwen3"], pool_rows(), tmp_path, reward=quarter_unscorable, max_steps=1)
    trainer.train()
    steps = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [s["tagrpo/unscorable"] for s in steps if "tagrpo/unscorable" in s] == [0.25]
    advantages = list(trainer._logs["advantages"])
    assert all(a == 0.0 for a in advantages[::4])


@pytest.mark.slow
def test_evaluating_mid_run_leaves_the_trajectory_unchanged(model_dirs, tmp_path):
    """A run that samples held-out responses after every step (as the demo's curve does) trains exactly as one
    that does not: evaluation draws from its own seeded RNG state, not the run's."""
    from transformers import TrainerCallback

    from tagrpo.evaluation.sampling import sample_responses

    class EvaluateEveryStep(TrainerCallback):
        def on_step_end(self, args, state, control, model=None, processing_class=None, **kwargs):
            sample_responses(model, processing_class, ["Q9 v0: what is 9+1?"], n=4, max_new_tokens=4, seed=5,
                             progress=False)

    def trajectory(out, callbacks):
        trainer = make_trainer(model_dirs["qwen3"], pool_rows(), out, max_steps=3)
        for callback in callbacks:
            trainer.add_callback(callback)
        trainer.train()
        rewards = [h["reward"] for h in trainer.state.log_history if "reward" in h]
        return rewards, torch.cat([p.detach().flatten() for p in trainer.model.parameters()])

    plain_rewards, plain_params = trajectory(tmp_path / "plain", [])
    eval_rewards, eval_params = trajectory(tmp_path / "eval", [EvaluateEveryStep()])
    assert len(plain_rewards) == 3 and eval_rewards == plain_rewards
    assert torch.equal(eval_params, plain_params)
