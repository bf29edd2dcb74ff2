"""Shared pieces of the verl tests (verl's own environment: ``make test-verl``)."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import torch
from conftest import pool_rows
from omegaconf import OmegaConf
from verl import DataProto
from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn
from verl.utils.model import compute_position_id_with_mask

from tagrpo.integrations.verl.convert import PLAIN_CHAT_TEMPLATE, to_verl_rows, write_parquet
from tagrpo.integrations.verl.expand import split_uid, variant_uid

CONFIG_DIR = Path(__file__).resolve().parents[1] / "examples" / "verl" / "config"
PAD = 0


def make_dataset(tmp_path):
    """RLHFDataset over 4 converted questions (question 2 has one rephrasing), character tokenizer."""
    from tagrpo.toy import build_char_tokenizer

    tokenizer = build_char_tokenizer()
    tokenizer.chat_template = PLAIN_CHAT_TEMPLATE
    rows = pool_rows(4, 3)
    rows[2]["rephrasings"] = rows[2]["rephrasings"][:1]  # a short list: filled with q0
    path = write_parquet(to_verl_rows(rows, template="plain")[0], tmp_path / "train.parquet")
    config = OmegaConf.create(
        {"prompt_key": "prompt", "max_prompt_length": 64, "filter_overlong_prompts": True, "truncation": "error",
         "cache_dir": str(tmp_path / "cache"), "filter_overlong_prompts_workers": 1}
    )  # fmt: skip
    return RLHFDataset(data_files=[path], tokenizer=tokenizer, config=config)


def question_batch(dataset, n=None):
    batch = DataProto.from_single_dict(collate_fn([dataset[i] for i in range(n or len(dataset))]))
    batch.non_tensor_batch["uid"] = np.array([f"u{i}" for i in range(len(batch))], dtype=object)
    return batch


def generated(uids, prompt_len=6, response_len=4, seed=0):
    """A batch laid out as verl's agent loop returns it: variant n's prompt has its own tokens and length."""
    gen = torch.Generator().manual_seed(seed)
    prompts, responses, resp_mask, tokens_of = [], [], [], {}
    for uid in uids:
        key, n = split_uid(uid)
        length = 2 + (7 * int(key[1:]) + 3 * n) % (prompt_len - 1)
        tokens = tokens_of.setdefault((key, n), torch.randint(10, 90, (length,), generator=gen))
        prompts.append(torch.cat([torch.full((prompt_len - length,), PAD), tokens]))
        used = int(torch.randint(1, response_len + 1, (1,), generator=gen))
        responses.append(
            torch.cat([torch.randint(10, 90, (used,), generator=gen), torch.full((response_len - used,), PAD)])
        )
        resp_mask.append((torch.arange(response_len) < used).long())
    prompts, responses, resp_mask = torch.stack(prompts), torch.stack(responses), torch.stack(resp_mask)
    attention = torch.cat([(prompts != PAD).long(), resp_mask], dim=1)
    batch = DataProto.from_single_dict(
        {"prompts": prompts, "responses": responses, "response_mask": resp_mask.clone(), "attention_mask": attention,
         "input_ids": torch.cat([prompts, responses], 1), "position_ids": compute_position_id_with_mask(attention),
         "rollout_log_probs": torch.randn(len(uids), response_len), "rm_scores": torch.rand(len(uids), response_len)}
    )  # fmt: skip
    batch.non_tensor_batch["uid"] = np.array(uids, dtype=object)
    return batch, tokens_of


def pool_uids(questions=3, variants=4, samples=2):
    uids = [variant_uid(f"u{b}", n) for b in range(questions) for n in range(variants) for _ in range(samples)]
    return random.Random(1).sample(uids, len(uids))
