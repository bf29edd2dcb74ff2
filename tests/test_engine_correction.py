"""The inference engine's importance-sampling correction inside TAGRPOTrainer, per anchor, with a stand-in engine.

``ShiftedEngine`` plays TRL's ``VLLMGeneration`` in colocate mode: it samples with the trainer's own model on the
prompt it is given and reports that model's log-probs of the sampled tokens *on that (generating) prompt*, minus a
known shift. A correction computed on the generating prompt must therefore give ``exp(SHIFT)`` on every token;
one computed against old log-probs on ``q0`` would not (the rephrasing shift leaks in). The tolerance covers
the trainer's left-padded batches against the engine's unpadded rows (positions differ by the padding: |delta
log-prob| up to about 0.002 here). The real vLLM run is ``make test-vllm``.
"""

from __future__ import annotations

import logging
import math

import pytest
import torch
from conftest import pool_rows
from trainer_utils import make_trainer, spy

from tagrpo.common.errors import InputError
from tagrpo.trainer import TAGRPOConfig

SHIFT = 0.2  # per token: log pi_old(o|q_n) - log pi_engine(o|q_n)


class ShiftedEngine:
    def __init__(self, trainer):
        self.trainer = trainer
        self.syncs = 0

    def sync_weights(self):
        self.syncs += 1

    def generate(self, prompts, images, num_generations, profiler):
        model, eos = self.trainer.model, self.trainer.processing_class.eos_token_id
        gen = torch.Generator().manual_seed(len(prompts) + self.syncs)
        completions, logprobs = [], []
        with torch.no_grad():
            for ids in prompts:
                length = int(torch.randint(1, 5, (1,), generator=gen))
                out = torch.randint(3, 60, (length,), generator=gen).tolist() + [eos]  # ids 3.. are characters
                logits = model(torch.tensor([list(ids) + out])).logits[0, len(ids) - 1 : -1].float()  # (T, V)
                token_logps = logits.log_softmax(-1).gather(1, torch.tensor(out).unsqueeze(1)).squeeze(1)  # (T,)
                completions.append(out)
                logprobs.append([[float(lp) - SHIFT] for lp in token_logps])  # top-1 of each token, as vLLM's
        return prompts, completions, logprobs, None


def engine_trainer(model_dir, tmp_path, **overrides):
    """A trainer whose generation goes through ``ShiftedEngine`` as if ``use_vllm=True`` (colocate)."""
    trainer = make_trainer(model_dir, pool_rows(), tmp_path, max_steps=1, temperature=1.0, **overrides)
    trainer.use_vllm, trainer.vllm_mode = True, "colocate"
    trainer.vllm_generation, trainer._last_loaded_step = ShiftedEngine(trainer), -1
    trainer.vllm_importance_sampling_mode = "token_truncate"
    trainer.vllm_importance_sampling_clip_min, trainer.vllm_importance_sampling_clip_max = None, 100.0  # ~unbounded
    trainer.vllm_importance_sampling_correction = True
    trainer._configure_engine_correction()
    return trainer


def run_step(trainer):
    outputs = []
    spy(trainer, "_generate_and_score_completions", outputs)
    trainer.train()
    return outputs[0][2]


@pytest.mark.parametrize("anchor", ["none", "behavior"])
def test_correction_on_the_generating_prompt_without_extra_pass(model_dirs, tmp_path, anchor):
    trainer = engine_trainer(model_dirs["qwen3"], tmp_path, anchor=anchor)
    calls = []
    spy(trainer, "_logps_on", calls)
    output = run_step(trainer)
    mask = output["completion_mask"].bool()  # (R, T)
    ratio = output["importance_sampling_ratio"][mask]  # (tokens,)
    torch.testing.assert_close(ratio, torch.full_like(ratio, math.exp(SHIFT)), rtol=0, atol=1e-2)
    assert trainer.engine_correction_plan == ("trl" if anchor == "none" else "generating")
    assert calls == [] if anchor == "none" else len(calls) == 1  # behavior: the behaviour pass, no extra one
    assert trainer.vllm_generation.syncs == 1


def test_original_auto_switches_the_correction_off(model_dirs, tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="tagrpo.trainer.trainer"):
        trainer = engine_trainer(model_dirs["qwen3"], tmp_path, anchor="original")
    assert "importance-sampling correction is disabled" in caplog.text
    assert trainer.engine_correction_plan == "off" and not trainer.vllm_importance_sampling_correction
    assert "importance_sampling_ratio" not in run_step(trainer)


def test_original_generating_costs_one_pass_on_the_generating_prompt(model_dirs, tmp_path):
    trainer = engine_trainer(model_dirs["qwen3"], tmp_path, anchor="original", engine_correction="generating")
    calls = []
    spy(trainer, "_logps_on", calls)
    output = run_step(trainer)
    assert len(calls) == 1
    mask = output["completion_mask"].bool()  # (R, T)
    ratio = output["importance_sampling_ratio"][mask]  # (tokens,)
    torch.testing.assert_close(ratio, torch.full_like(ratio, math.exp(SHIFT)), rtol=0, atol=1e-2)
    # What TRL would have used: old log-probs on q0 against the engine's on q_n. On rephrased rows it is off.
    sampling = output["sampling_per_token_logps"]  # (R, T)
    cross = torch.exp(output["old_per_token_logps"] - sampling)  # (R, T)
    rephrased = output["variant_index"].bool().unsqueeze(1) & mask  # (R, T)
    assert (cross[rephrased] - math.exp(SHIFT)).abs().max() > 0.05


def test_engine_correction_off_for_every_anchor(model_dirs, tmp_path):
    trainer = engine_trainer(model_dirs["qwen3"], tmp_path, anchor="none", engine_correction="off")
    assert trainer.engine_correction_plan == "off"
    assert "importance_sampling_ratio" not in run_step(trainer)


@pytest.mark.parametrize(("anchor", "use_vllm"), [("behavior", False), ("original", True), ("behavior", True)])
def test_off_policy_mask_refused_across_conditionals(tmp_path, anchor, use_vllm):
    with pytest.raises(InputError, match="off_policy_mask_threshold"):
        TAGRPOConfig(output_dir=str(tmp_path), anchor=anchor, off_policy_mask_threshold=0.5, use_vllm=use_vllm,
                     num_generations=2, per_device_train_batch_size=8, use_cpu=True, report_to=[])


@pytest.mark.parametrize(("anchor", "use_vllm"), [("none", True), ("original", False)])
def test_off_policy_mask_accepted_on_one_conditional(tmp_path, anchor, use_vllm):
    config = TAGRPOConfig(output_dir=str(tmp_path), anchor=anchor, off_policy_mask_threshold=0.5, use_vllm=use_vllm,
                          num_generations=2, per_device_train_batch_size=8, use_cpu=True, report_to=[])
    assert config.off_policy_mask_threshold == 0.5


def test_unknown_engine_correction_lists_the_modes(tmp_path):
    with pytest.raises(ValueError, match="'auto', 'generating', 'off'"):
        TAGRPOConfig(output_dir=str(tmp_path), engine_correction="on", num_generations=2,
                     per_device_train_batch_size=8, use_cpu=True, report_to=[])


def test_trl_names_the_engine_correction_relies_on():
    """Contract with TRL 1.16: the names ``_engine_ratio`` reads, writes and replaces."""
    import inspect

    from trl import GRPOTrainer

    from tagrpo.core import engine_ratio_metrics

    produce = inspect.getsource(GRPOTrainer._generate_and_score_completions)
    consume = inspect.getsource(GRPOTrainer._compute_loss)
    assert 'output["sampling_per_token_logps"]' in produce and 'output["importance_sampling_ratio"]' in produce
    assert 'inputs["importance_sampling_ratio"]' in consume
    zeros = torch.zeros(1, 1)
    for key in engine_ratio_metrics(zeros, zeros, torch.ones(1, 1), zeros):
        assert f'"{key}"' in produce, key  # the series whose last value is replaced
    init = inspect.getsource(GRPOTrainer.__init__)
    for name in ("vllm_importance_sampling_mode", "vllm_importance_sampling_clip_min",
                 "vllm_importance_sampling_clip_max", "_last_loaded_step"):
        assert f"self.{name} =" in init, name
