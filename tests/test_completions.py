"""What reward functions and the completions table see of a pool's rows (tagrpo.trainer.completions), and the
adaptive modes scoring each completion once."""

from __future__ import annotations

import json
import re
import types
import zlib

import pandas as pd
import pytest
import torch
from conftest import pool_rows
from trainer_utils import hash_reward, make_trainer

from tagrpo.common.errors import InputError
from tagrpo.trainer.completions import reward_rows

N, G = 3, 2
PROMPT = re.compile(r"Q(\d+) v(\d+):")


def test_a_reward_function_sees_q0_as_prompts_and_each_rows_variant_and_generating_prompt(model_dirs, tmp_path):
    calls = []

    def recording(prompts, completions, completion_ids, **kwargs):
        calls.append(dict(prompts=prompts, completions=completions, completion_ids=completion_ids, **kwargs))
        return hash_reward(completions)

    trainer = make_trainer(model_dirs["qwen3"], pool_rows(), tmp_path, reward=recording, max_steps=1)
    trainer.train()
    (call,) = calls  # one call per step, every row of the generation batch
    rows = {r["id"]: r for r in pool_rows()}
    assert len(call["completions"]) == len(call["completion_ids"]) == 16  # two pools of (N+1)*G
    for j, (qid, prompt, variant, generating) in enumerate(
        zip(call["id"], call["prompts"], call["variant"], call["generating_prompt"], strict=True)
    ):
        assert qid == call["id"][j - j % 8]  # pools are consecutive rows of one question
        assert variant == (j % 8) // G
        assert prompt == rows[qid]["prompt"]  # q0, also for the rows a rephrasing generated
        assert generating == [rows[qid]["prompt"], *rows[qid]["rephrasings"]][variant]
        assert call["answer"][j] == rows[qid]["answer"] and call["rephrasings"][j] == rows[qid]["rephrasings"]
    assert {"trainer_state", "log_extra", "log_metric"} <= call.keys()  # TRL's own keywords stay


def test_a_train_column_named_like_a_reward_keyword_is_refused():
    rows = [{"prompt": "q", "variant": "hard"}]
    with pytest.raises(InputError, match=r"^the train rows have the column 'variant', which TAGRPOTrainer passes to "
                                         r"reward functions \(the variant that generated each row\); rename that "
                                         r"column$"):
        reward_rows(rows, torch.zeros(1, dtype=torch.long), ["q"])


def by_question(completions, id, **kwargs):
    """q0 always right, q1 always wrong (both uniform: expanded), the others by a checksum (often mixed)."""
    return [1.0 if q == "q0" else 0.0 if q == "q1" else float(zlib.crc32(c.encode()) % 2)
            for c, q in zip(completions, id, strict=True)]


@pytest.mark.parametrize("pool_mode", ["adaptive", "history"])
def test_the_adaptive_modes_score_each_generated_completion_once(model_dirs, tmp_path, pool_mode):
    scored = []  # (step, question, variant) of every completion a reward function was called on

    def counting(completions, id, variant, trainer_state, **kwargs):
        scored.extend((trainer_state.global_step, q, n) for q, n in zip(id, variant, strict=True))
        return by_question(completions, id)

    trainer = make_trainer(model_dirs["qwen3"], pool_rows(num_questions=4), tmp_path, reward=counting,
                           pool_mode=pool_mode, per_device_train_batch_size=16, gradient_accumulation_steps=2,
                           max_steps=2)
    trainer.train()
    steps = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    rollouts = [s["tagrpo/rollouts"] for s in steps if "tagrpo/rollouts" in s]
    assert len(scored) == rollouts[-1]  # one score per completion generated, none for the rows never generated
    for step, generated in enumerate([rollouts[0], rollouts[1] - rollouts[0]]):
        here = [(q, n) for s, q, n in scored if s == step]
        assert len(here) == generated
        assert sorted(q for q, n in here if n == 0) == sorted(f"q{i}" for i in range(4) for _ in range(G))
        expanded = {q for q, n in here if n > 0}
        assert sorted((q, n) for q, n in here if n > 0) == sorted(
            (q, n) for q in expanded for n in range(1, N + 1) for _ in range(G)
        )
    assert rollouts[0] < 4 * (N + 1) * G or pool_mode == "history"  # adaptive: q1, q0 uniform, others may not be


def test_the_completions_table_names_each_rows_variant_and_generating_prompt(model_dirs, tmp_path, monkeypatch):
    tables = []

    class Backend:  # stands in for trackio, one of the two backends TRL sends the table to
        Table = staticmethod(lambda dataframe: dataframe)

        @staticmethod
        def log(record):
            tables.append(record["completions"])

    monkeypatch.setattr("trl.trainer.grpo_trainer.trackio", types.SimpleNamespace(Table=Backend.Table, log=Backend.log),
                        raising=False)
    trainer = make_trainer(model_dirs["qwen3"], pool_rows(), tmp_path, max_steps=1, log_completions=True,
                           log_unique_prompts=True, advantage_scope="variant")
    trainer.args.report_to = ["trackio"]  # after the build: transformers would look for the package
    trainer.train()

    table = pd.read_parquet(tmp_path / "completions" / "completions_00001.parquet")
    assert len(table) == 16
    rows = {r["id"]: r for r in pool_rows()}
    for prompt, variant in zip(table["prompt"], table["variant"], strict=True):
        q, n = PROMPT.match(prompt).groups()
        assert variant == f"q{n}"  # the prompt column is the prompt that generated the row
        assert prompt == [rows[f"q{q}"]["prompt"], *rows[f"q{q}"]["rephrasings"]][int(n)]
    assert sorted(table["variant"]) == sorted(f"q{n}" for n in range(N + 1) for _ in range(2 * G))
    assert table["advantage"].tolist() == list(trainer._logs["advantages"])  # the loss's (variant scope), not TRL's

    assert tables  # TRL logs it with the step and again with the run's summary
    unique = tables[0]  # log_unique_prompts: one row per prompt actually sampled, N+1 per pool
    assert len(unique) == 2 * (N + 1) and sorted(unique["variant"]) == sorted([f"q{n}" for n in range(N + 1)] * 2)
