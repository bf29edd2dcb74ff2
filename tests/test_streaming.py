"""TAGRPOTrainer on a streaming ``datasets.IterableDataset``: whole pools, rows checked as they arrive."""

from __future__ import annotations

import re

import pytest
import torch
from conftest import pool_rows
from datasets import IterableDataset
from trainer_utils import hash_reward, make_config, spy

from tagrpo.common.errors import InputError
from tagrpo.trainer import TAGRPOTrainer

PROMPT = re.compile(r"Q(\d+) v(\d+):")


def _stream(rows, pulled: list):
    """An ``IterableDataset.from_generator`` (``column_names`` None) that records each row's id as it is read."""

    def generate():
        for row in rows:
            pulled.append(row["id"])
            yield row

    return IterableDataset.from_generator(generate)


def test_a_stream_trains_whole_pools_in_stream_order_without_being_read_ahead(model_dirs, tmp_path):
    pulled = []
    stream = _stream(pool_rows(num_questions=40), pulled)
    assert stream.column_names is None
    trainer = TAGRPOTrainer(model_dirs["qwen3"], [hash_reward], args=make_config(tmp_path, shuffle_dataset=False),
                            train_dataset=stream)
    assert pulled == []  # building the trainer reads nothing
    steps, generated = [], []
    spy(trainer, "_generate_and_score_completions", steps)
    spy(trainer, "_generate_single_turn", generated)
    trainer.train()
    assert trainer.state.global_step == 2 and trainer.rollouts == 32
    ids = [[x["id"] for x in args[0]] for args, _, _ in steps]  # 16 rows per step: two pools of (3+1)*2
    assert ids == [["q0"] * 8 + ["q1"] * 8, ["q2"] * 8 + ["q3"] * 8]
    for args, _, _ in generated:  # row j of a pool is generated from variant j // G of its question
        texts = [trainer.processing_class.decode(torch.as_tensor(row).tolist()) for row in args[0]]
        assert [int(PROMPT.match(t).group(2)) for t in texts] == [(j % 8) // 2 for j in range(16)]
    assert len(pulled) < 40  # the stream was read as far as training went (and the loader's prefetch), no further


@pytest.mark.parametrize(("damage", "message"), [
    (lambda row: row.update(rephrasings=row["rephrasings"][:1]),
     r"^train stream row 2 \(id 'q1'\): field 'rephrasings' has 1 entries, num_rephrasings=3 "
     r"\(apply tagrpo.data.fit_rephrasings first\)$"),
    (lambda row: row.pop("rephrasings"),
     r"^train stream row 2 \(id 'q1'\): no field 'rephrasings', num_rephrasings=3$"),
])
def test_a_short_row_in_a_stream_stops_training_with_one_line_naming_it(model_dirs, tmp_path, damage, message):
    rows = pool_rows(num_questions=4)
    damage(rows[1])
    pulled = []
    trainer = TAGRPOTrainer(model_dirs["qwen3"], [hash_reward], args=make_config(tmp_path, shuffle_dataset=False),
                            train_dataset=_stream(rows, pulled))
    with pytest.raises(InputError, match=message):
        trainer.train()
    assert trainer.state.global_step == 0
    assert "q1" in pulled


def test_a_short_row_past_the_trained_part_of_a_stream_is_never_read(model_dirs, tmp_path):
    rows = pool_rows(num_questions=40)
    rows[30]["rephrasings"] = []
    pulled = []
    trainer = TAGRPOTrainer(model_dirs["qwen3"], [hash_reward], args=make_config(tmp_path, shuffle_dataset=False),
                            train_dataset=_stream(rows, pulled))
    trainer.train()
    assert trainer.state.global_step == 2 and "q30" not in pulled
