"""A real logger: a TensorBoard run (offline) holds tagrpo's pool metrics, read back with TensorBoard's own reader."""

from __future__ import annotations

import json

import pytest
from conftest import pool_rows
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from trainer_utils import make_trainer


def test_tensorboard_receives_every_tagrpo_metric_of_every_step(model_dirs, tmp_path, monkeypatch):
    monkeypatch.setenv("TENSORBOARD_LOGGING_DIR", str(tmp_path / "tb"))  # transformers 5's way to place the run
    trainer = make_trainer(model_dirs["qwen3"], pool_rows(), tmp_path, report_to=["tensorboard"])
    trainer.train()
    (run,) = [p for p in (tmp_path / "tb").rglob("events.out.tfevents.*")]
    events = EventAccumulator(str(run.parent))
    events.Reload()
    logged = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in logged if "tagrpo/rollouts" in r]
    assert [r["step"] for r in steps] == [1, 2]
    expected = {key for r in steps for key, value in r.items() if key.startswith("tagrpo/") and value is not None}
    assert {"tagrpo/pool/zero_std", "tagrpo/original/zero_std", "tagrpo/rescued", "tagrpo/reward/variant_3",
            "tagrpo/rollouts", "tagrpo/unscorable"} <= expected
    tags = set(events.Tags()["scalars"])
    assert {f"train/{key}" for key in expected} <= tags
    for key in expected:
        written = {e.step: e.value for e in events.Scalars(f"train/{key}")}
        for record in steps:
            if record.get(key) is not None:
                assert written[record["step"]] == pytest.approx(record[key], rel=1e-6), key
    assert [e.value for e in events.Scalars("train/tagrpo/rollouts")] == [16.0, 32.0]
