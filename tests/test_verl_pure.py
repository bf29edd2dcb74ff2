"""The verl add-on's pure parts (no verl needed): expansion, anchoring maths, estimator, converter, reward."""

from __future__ import annotations

import json
import random

import pyarrow.parquet as pq
import pytest
import torch
from conftest import pool_rows

from tagrpo.core import pooled_advantages
from tagrpo.integrations.verl.advantage import ta_grpo_advantages
from tagrpo.integrations.verl.anchor import anchor_rows, left_pad, original_rows, position_ids_from_mask
from tagrpo.integrations.verl.convert import main as convert_main
from tagrpo.integrations.verl.convert import to_verl_rows
from tagrpo.integrations.verl.expand import check_pools, expand_prompts, fit_variants, split_uid, variant_uid
from tagrpo.integrations.verl.reward import compute_score
from tagrpo.integrations.verl.settings import TAGRPOSettings, check_config


def _chat(text):
    return [{"role": "user", "content": text}]


# ---- expansion ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("uid", ["abc", "a#v1#b", "q#v", "", "x#v12"])
def test_uid_round_trip(uid):
    for n in (0, 3, 11):
        assert split_uid(variant_uid(uid, n)) == (uid, n)


def test_plain_uid_is_its_own_pool():
    assert split_uid("3f2c-uuid") == ("3f2c-uuid", 0)


def test_fit_variants_short_rules():
    assert fit_variants("q", ["a", "b", "c", "d"], 3, "fill_original") == ["q", "a", "b", "c"]
    assert fit_variants("q", ["a"], 3, "fill_original") == ["q", "a", "q", "q"]
    assert fit_variants("q", ["a", "b"], 3, "cycle") == ["q", "a", "b", "a"]
    assert fit_variants("q", [], 2, "cycle") == ["q", "q", "q"]
    assert fit_variants("q", ["a"], 0, "cycle") == ["q"]
    with pytest.raises(ValueError, match="short_rephrasings"):
        fit_variants("q", [], 1, "drop")


def test_expand_prompts_keeps_questions_contiguous_and_tagged():
    prompts = [_chat(f"Q{b}") for b in range(3)]
    rephrasings = [[_chat(f"Q{b} v{n}") for n in range(1, 4)] for b in range(3)]
    rephrasings[1] = ["plain text v1"]  # short, and text rather than chat
    out, uids, variants, source = expand_prompts(prompts, rephrasings, ["u0", "u1", "u2"], 3)
    assert len(out) == 12 and source == [b for b in range(3) for _ in range(4)]
    assert variants == [0, 1, 2, 3] * 3
    assert uids[:4] == ["u0#v0", "u0#v1", "u0#v2", "u0#v3"]
    assert out[0] == _chat("Q0") and out[3] == _chat("Q0 v3")
    assert out[5] == _chat("plain text v1") and out[6] == _chat("Q1") and out[7] == _chat("Q1")
    assert check_pools([u for u in uids for _ in range(8)], pool_size=32).keys() == {"u0", "u1", "u2"}


def test_check_pools_rejects_split_pools():
    uids = [variant_uid("a", n) for n in range(4) for _ in range(2)]
    check_pools(uids, pool_size=8)
    with pytest.raises(ValueError, match="not whole"):
        check_pools(uids[:-1])
    with pytest.raises(ValueError, match="not whole"):
        check_pools([u for u in uids if not u.endswith("#v2")])
    with pytest.raises(ValueError, match="expected 16"):
        check_pools(uids, pool_size=16)


# ---- anchoring -----------------------------------------------------------------------------------------------------
def test_left_pad_widens_and_narrows():
    ids = torch.tensor([[0, 0, 5, 6], [0, 7, 8, 9]])
    mask = (ids != 0).long()
    wide, wide_mask = left_pad(ids, mask, 6, pad_token_id=0)
    assert wide.tolist() == [[0, 0, 0, 0, 5, 6], [0, 0, 0, 7, 8, 9]] and wide_mask.sum().item() == 5
    narrow, narrow_mask = left_pad(ids, mask, 3, pad_token_id=0)
    assert narrow.tolist() == [[0, 5, 6], [7, 8, 9]] and narrow_mask.tolist() == [[0, 1, 1], [1, 1, 1]]
    with pytest.raises(ValueError, match="more than the width"):
        left_pad(ids, mask, 2, pad_token_id=0)


def test_anchor_rows_is_q0_prompt_then_unchanged_response():
    pad = 0
    q0 = torch.tensor([[0, 0, 11, 12], [0, 21, 22, 23]])  # (R, P0) two rows, different prompt lengths
    q0_mask = (q0 != pad).long()
    responses = torch.tensor([[31, 32, 0], [41, 0, 0]])  # (R, T) right-padded
    response_attention = (responses != pad).long()
    out = anchor_rows(q0, q0_mask, responses, response_attention, pad, prompt_width=5)
    assert out.prompts.tolist() == [[0, 0, 0, 11, 12], [0, 0, 21, 22, 23]]
    assert out.input_ids.tolist() == [[0, 0, 0, 11, 12, 31, 32, 0], [0, 0, 21, 22, 23, 41, 0, 0]]
    assert out.attention_mask.tolist() == [[0, 0, 0, 1, 1, 1, 1, 0], [0, 0, 1, 1, 1, 1, 0, 0]]
    assert out.position_ids.tolist() == [[0, 0, 0, 0, 1, 2, 3, 3], [0, 0, 0, 1, 2, 3, 3, 3]]
    assert torch.equal(out.position_ids, position_ids_from_mask(out.attention_mask))


def test_original_rows_points_at_q0_rows_of_the_same_pool():
    uids = ["b#v1", "a#v0", "b#v0", "a#v1", "a#v0", "b#v1"]
    assert original_rows(uids).tolist() == [2, 1, 2, 1, 1, 2]
    with pytest.raises(ValueError, match="no row generated from q0"):
        original_rows(["c#v1", "c#v2"])


# ---- estimator -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("scope", ["pool", "variant"])
@pytest.mark.parametrize("seed", range(5))
def test_estimator_equals_core_on_shuffled_random_batches(scope, seed):
    gen = torch.Generator().manual_seed(seed)
    b, v, g, t = 3, 4, 5, 6
    rewards = torch.randint(0, 2, (b, v, g), generator=gen).float() * torch.rand(b, v, g, generator=gen)
    expected = pooled_advantages(rewards, scope=scope, scale="std", eps=1e-6)  # (B, V, G)
    rows = [(bi, n, i) for bi in range(b) for n in range(v) for i in range(g)]
    random.Random(seed).shuffle(rows)  # verl reorders rows (batch balancing)
    lengths = torch.randint(1, t + 1, (len(rows),), generator=gen)
    mask = (torch.arange(t)[None] < lengths[:, None]).float()  # (R, T)
    token_rewards = torch.zeros(len(rows), t)
    for r, (bi, n, i) in enumerate(rows):
        token_rewards[r, lengths[r] - 1] = rewards[bi, n, i]
    uids = [variant_uid(f"question-{bi}", n) for bi, n, _ in rows]
    adv, ret = ta_grpo_advantages(token_rewards, mask, uids, scope=scope)
    assert torch.equal(adv, ret)
    for r, (bi, n, i) in enumerate(rows):
        assert torch.allclose(adv[r], expected[bi, n, i] * mask[r], atol=1e-6)


def test_estimator_reads_scale_from_config_and_pads_uneven_pools():
    rewards = torch.tensor([[1.0], [0.0], [1.0], [0.0], [0.0]])
    uids = ["a#v0", "a#v0", "a#v1", "b#v0", "b#v0"]
    adv, _ = ta_grpo_advantages(rewards, torch.ones(5, 1), uids, config={"norm_adv_by_std_in_grpo": False})
    assert torch.allclose(adv[:, 0], torch.tensor([1 / 3, -2 / 3, 1 / 3, 0.0, 0.0]))


# ---- converter and reward ------------------------------------------------------------------------------------------
def test_to_verl_rows_fields():
    rows, counts = to_verl_rows(pool_rows(2, 3), num_rephrasings=2)
    assert counts["written"] == 2 and counts["truncated"] == 2
    row = rows[1]
    assert row["data_source"] == "tagrpo/math" and row["reward_model"] == {"style": "rule", "ground_truth": "2"}
    assert row["prompt"][0]["role"] == "user" and row["prompt"][0]["content"].startswith("You FIRST think")
    assert row["prompt"][0]["content"].endswith("Q1 v0: what is 1+1?")
    info = row["extra_info"]
    assert info["index"] == 1 and info["original_id"] == "q1" and len(info["rephrasings"]) == 2
    assert info["rephrasings"][1][0]["content"].endswith("Q1 v2: add 1 and 1")


def test_convert_cli_writes_parquet(tmp_path, capsys):
    source = tmp_path / "rephrased.jsonl"
    source.write_text("\n".join(json.dumps(r) for r in pool_rows(3, 3)) + "\n")
    out = tmp_path / "verl" / "train.parquet"
    assert convert_main([str(source), str(out), "--num-rephrasings", "3"]) == 0
    table = pq.read_table(out).to_pylist()
    assert [r["extra_info"]["original_id"] for r in table] == ["q0", "q1", "q2"]
    assert table[2]["extra_info"]["rephrasings"][0] == [
        {"role": "user", "content": table[2]["extra_info"]["rephrasings"][0][0]["content"]}
    ]
    assert "written=3" in capsys.readouterr().out


def test_compute_score_uses_math_reward():
    assert compute_score("tagrpo/math", "so \\boxed{\\frac{1}{2}}", "\\frac12") == {"score": 1.0, "acc": 1.0}
    assert compute_score("tagrpo/math", "I think 3", "3")["score"] == 0.0
    assert compute_score("tagrpo/choice", "\\boxed{B}", "B")["score"] == 1.0


def test_settings_validation():
    assert TAGRPOSettings.from_config({"tagrpo": {"num_rephrasings": 0}}).variants == 1
    with pytest.raises(ValueError, match="anchor"):
        TAGRPOSettings(anchor="q0")
    config = {"trainer": {"use_v1": True}}
    with pytest.raises(ValueError, match="use_v1=false"):
        check_config(config, TAGRPOSettings())
    bypass = {"algorithm": {"adv_estimator": "ta_grpo", "rollout_correction": {"bypass_mode": True}}}
    with pytest.raises(ValueError, match="bypass_mode"):
        check_config(bypass, TAGRPOSettings())
    assert check_config(bypass, TAGRPOSettings(anchor="none")) == []
    corrected = {"algorithm": {"adv_estimator": "grpo", "rollout_correction": {"rollout_is": "token"}}}
    assert len(check_config(corrected, TAGRPOSettings())) == 2


def test_convert_drops_rephrasings_longer_than_the_prompt_limit(tmp_path):
    from tagrpo.toy import build_char_tokenizer

    build_char_tokenizer().save_pretrained(tmp_path / "tok")
    rows = pool_rows(2, 2)
    rows[0]["rephrasings"][1] = "a much longer rephrasing " * 20
    source = tmp_path / "rephrased.jsonl"
    source.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    out = tmp_path / "train.parquet"
    args = [str(source), str(out), "--template", "plain", "--tokenizer", str(tmp_path / "tok")]
    assert convert_main([*args, "--max-prompt-length", "100"]) == 0
    table = pq.read_table(out).to_pylist()
    assert [len(r["extra_info"]["rephrasings"]) for r in table] == [1, 2]


# ---- per-step records ---------------------------------------------------------------------------------------------
def _record_batch():
    """Two rows as verl lays them out: prompts left-padded to 3, responses right-padded to 3 (pad 0)."""
    from types import SimpleNamespace

    prompts = torch.tensor([[0, 5, 6], [7, 8, 9]])  # (R, P)
    responses = torch.tensor([[3, 4, 0], [2, 0, 0]])  # (R, T)
    response_mask = torch.tensor([[1, 1, 0], [1, 0, 0]])  # (R, T)
    tensors = {
        "prompts": prompts,
        "responses": responses,
        "response_mask": response_mask,
        "attention_mask": torch.cat([(prompts != 0).long(), response_mask], dim=1),  # (R, P+T)
        "token_level_rewards": torch.tensor([[0.0, 1.0, 0.0], [0.0, 0.0, 0.0]]),
        "advantages": torch.tensor([[0.7, 0.7, 0.0], [-0.7, 0.0, 0.0]]),
        "old_log_probs": torch.tensor([[-1.0, -3.0, -9.0], [-2.0, -9.0, -9.0]]),
        "rollout_log_probs": torch.tensor([[-1.5, -2.5, 0.0], [-2.5, 0.0, 0.0]]),
    }
    return SimpleNamespace(batch=tensors, non_tensor_batch={"uid": ["a#v0", "a#v1"]})


def test_records_hold_each_rows_tokens_outcome_and_response_means(tmp_path):
    from tagrpo.data.jsonl import read_jsonl
    from tagrpo.integrations.verl.record import generated_part, updated_part, write_record

    batch = _record_batch()
    generated = generated_part(batch)
    assert generated["prompt"] == [[5, 6], [7, 8, 9]] and generated["response"] == [[3, 4], [2]]
    assert generated["rollout_log_prob"] == [-2.0, -2.5]  # means over the response tokens only
    updated = updated_part(batch, dp=2)
    assert updated["uid"] == ["a#v0", "a#v1"] and updated["dp"] == 2
    assert updated["reward"] == [1.0, 0.0] and updated["advantage"] == pytest.approx([0.7, -0.7])
    assert updated["old_log_prob"] == [-2.0, -2.0] and updated["response_tokens"] == [2, 1]
    assert "ref_log_prob" not in updated  # no reference model, no key
    path = write_record(tmp_path / "rec", 3, [generated, updated])
    assert path.name == "step_00003.jsonl" and [p["part"] for p in read_jsonl(str(path))] == ["generated", "updated"]


def test_record_dir_is_read_from_the_tagrpo_section():
    assert TAGRPOSettings.from_config({"tagrpo": {}}).record_dir is None
    assert TAGRPOSettings.from_config({"tagrpo": {"record_dir": "/x/rec"}}).record_dir == "/x/rec"
