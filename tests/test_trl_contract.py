"""The TRL contract (tagrpo.trainer.contract): it holds for the installed TRL, and each kind of clause fails with
its sentence when the relied-on name is changed on a copy."""

from __future__ import annotations

import types

import pytest
import torch
import trl.trainer.utils as trl_utils
from trl import GRPOTrainer

from tagrpo.common.contracts import ContractError, enforce, problems
from tagrpo.trainer.contract import OWN_ATTRIBUTES, class_clauses, instance_clauses
from tagrpo.trainer.seam import GENERATE_FIELDS, Generation, StepState


def test_installed_trl_holds_the_contract():
    broken = problems(class_clauses())
    assert not broken, "\n".join(broken)


def test_a_built_trl_trainer_holds_the_instance_contract(model_dirs, tmp_path):
    from trainer_utils import trl_trainer

    trainer = trl_trainer(model_dirs["qwen3"], tmp_path, num_generations=4)
    assert problems(instance_clauses(trainer)) == []


class _Changed(GRPOTrainer):
    """A TRL whose `_generate` returns one more field and whose `_calculate_rewards` lost two parameters."""

    def _generate(self, prompts: list):
        prompt_ids = completion_ids = tool_mask = completions = logprobs = extra_fields = images = tool_images = None
        return prompt_ids, completion_ids, tool_mask, completions, logprobs, extra_fields, images, tool_images, None

    def _calculate_rewards(self, inputs, completions):
        return inputs

    def _generate_and_score_completions(self, inputs):
        return self._generate_batch(inputs)


def test_changed_trl_fails_with_one_sentence_per_changed_name():
    broken = problems(class_clauses(_Changed))
    assert (
        "TRL's GRPOTrainer's `_generate` now returns 9 fields (prompt_ids, completion_ids, tool_mask, completions, "
        "logprobs, extra_fields, images, tool_images, None); tagrpo expects 8: (prompt_ids, completion_ids, "
        "tool_mask, completions, logprobs, extra_fields, images, tool_images)"
    ) in broken
    assert (
        "TRL's GRPOTrainer's `_calculate_rewards` now takes (inputs, completions); tagrpo calls it with (inputs, "
        "prompts, completions, completion_ids_list)"
    ) in broken
    assert any(m.startswith(
        "TRL's GRPOTrainer's `_generate_and_score_completions` no longer contains `= self._generate(prompts)`"
    ) for m in broken)
    assert len(broken) == 8  # the two above and the step's six source clauses; the other names are TRL's


def test_a_removed_name_is_named():
    bare = type("Bare", (), {})
    utils = types.SimpleNamespace(pad=trl_utils.pad)
    broken = problems(class_clauses(bare, utils))
    assert "TRL's GRPOTrainer's `_tokenize_prompts` is gone" in broken
    assert "trl.trainer.utils no longer has `_use_triton`" in broken
    assert "trl.trainer.utils no longer has `pad`" not in broken


def test_instance_clauses_name_a_missing_buffer_and_a_clash():
    names = ("_metrics", "_tokenizer", "reward_weights", "use_vllm", "vllm_importance_sampling_correction",
             "vllm_importance_sampling_mode", "vllm_importance_sampling_clip_min", "vllm_importance_sampling_clip_max",
             "tools", "environment_factories", "num_generations")  # fmt: skip
    trainer = types.SimpleNamespace(**dict.fromkeys(names), _logs={"prompt": []}, rollouts=0)
    trainer._metrics = {"train": {}}
    broken = problems(instance_clauses(trainer))
    assert broken == [
        "a built TRL's GRPOTrainer's `_logs` no longer has the key 'advantages' (it has ['prompt'])",
        "a built TRL's GRPOTrainer now has its own `rollouts`, which TAGRPOTrainer also sets (a name clash)",
    ]
    assert "rollouts" in OWN_ATTRIBUTES


def test_enforce_lists_every_broken_clause_with_the_version():
    with pytest.raises(ContractError) as err:
        enforce(class_clauses(_Changed), "trl", "9.9.9", "TAGRPOTrainer")
    text = str(err.value)
    assert text.startswith("TAGRPOTrainer relies on trl internals that changed in the installed trl 9.9.9:\n- ")
    assert text.count("\n- ") == 8


def test_generation_names_trl_fields_and_refuses_another_length():
    values = tuple(range(len(GENERATE_FIELDS)))
    generation = Generation.from_trl(values)
    assert (generation.prompt_ids, generation.completions, generation.tool_images) == (0, 3, 7)
    assert generation.to_trl() == values
    with pytest.raises(ContractError, match=r"TRL's `_generate` now returns 9 fields; tagrpo expects 8: \(prompt_ids"):
        Generation.from_trl((*values, 8))


def test_step_state_names_the_override_that_did_not_run():
    step = StepState(torch.zeros(2, dtype=torch.long), [["q"], ["q"]], [{}, {}], ["a", "a"])  # (R,) R=2
    with pytest.raises(ContractError, match=r"did not call `_generate` before it returned, so tagrpo has no "
                                            r"`generated`"):
        step.need("generated")
    with pytest.raises(ContractError, match=r"did not call `_calculate_rewards`"):
        step.need("rewards")
    step.generated = torch.ones(2, dtype=torch.bool)  # (R,)
    assert step.need("generated").all()
