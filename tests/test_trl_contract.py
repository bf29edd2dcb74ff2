"""The TRL contract (tagrpo.trainer.contract): names and signatures checked at build, the number of returned values
where tagrpo receives them, and TRL's behaviour on a tiny run. Each holds for the installed TRL and fails with its
sentence on a changed copy (a changed class, or a changed record of the step)."""

from __future__ import annotations

import dataclasses
import types
from collections import defaultdict

import pytest
import torch
import trl.trainer.utils as trl_utils
from trl import GRPOTrainer

from tagrpo.common.contracts import ContractError, arity, enforce, problems
from tagrpo.trainer import AdaptiveTAGRPOTrainer, TAGRPOTrainer
from tagrpo.trainer.contract import (
    OWN_ATTRIBUTES,
    behaviour,
    behaviour_clauses,
    class_clauses,
    instance_clauses,
    record_step,
)
from tagrpo.trainer.seam import GENERATE_FIELDS, Generation, StepState

DEFAULT_SEAM = {"_generate_and_score_completions", "_generate", "_calculate_rewards",
                "_get_per_token_logps_and_entropies", "_get_train_sampler"}  # fmt: skip


def test_installed_trl_holds_the_contract():
    broken = problems(class_clauses())
    assert not broken, "\n".join(broken)


def test_the_default_trainer_overrides_only_what_pooling_and_anchoring_need():
    def private_overrides(cls):
        return {n for n in vars(cls) if n.startswith("_") and not n.startswith("__") and hasattr(GRPOTrainer, n)}

    assert private_overrides(TAGRPOTrainer) == DEFAULT_SEAM
    assert private_overrides(AdaptiveTAGRPOTrainer) == set()  # only tagrpo's own hooks
    assert {"_generate_rows", "_score_rows"} <= set(vars(AdaptiveTAGRPOTrainer))


def test_a_built_trl_trainer_holds_the_instance_contract(model_dirs, tmp_path):
    from trainer_utils import trl_trainer

    trainer = trl_trainer(model_dirs["qwen3"], tmp_path, num_generations=4)
    assert problems(instance_clauses(trainer)) == []


class _Changed(GRPOTrainer):
    """A TRL whose `_calculate_rewards` lost two parameters and whose `train` renamed its checkpoint parameter."""

    def _calculate_rewards(self, inputs, completions):
        return inputs

    def train(self, checkpoint=None):
        return checkpoint


def test_changed_trl_fails_with_one_sentence_per_changed_signature():
    assert problems(class_clauses(_Changed)) == [
        "TRL's GRPOTrainer's `_calculate_rewards` now takes (inputs, completions); tagrpo calls it with (inputs, "
        "prompts, completions, completion_ids_list)",
        "TRL's GRPOTrainer's `train` now takes (checkpoint); tagrpo calls it with (resume_from_checkpoint)",
    ]


def test_a_removed_name_is_named():
    bare = type("Bare", (), {})
    utils = types.SimpleNamespace(pad=trl_utils.pad)
    broken = problems(class_clauses(bare, utils, bare))
    assert "TRL's GRPOTrainer's `_tokenize_prompts` is gone" in broken
    assert "transformers' TrainerCallback's `on_save` is gone" in broken
    assert "trl.trainer.utils no longer has `_use_triton`" in broken
    assert "trl.trainer.utils no longer has `pad`" not in broken


def test_instance_clauses_name_a_missing_buffer_and_a_clash():
    names = ("_metrics", "processing_class", "reward_weights", "use_vllm", "vllm_importance_sampling_correction",
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
    assert text.count("\n- ") == 2


def test_generation_names_trl_fields_and_refuses_another_length():
    values = tuple(range(len(GENERATE_FIELDS)))
    generation = Generation.from_trl(values)
    assert (generation.prompt_ids, generation.completions, generation.tool_images) == (0, 3, 7)
    assert generation.to_trl() == values
    with pytest.raises(ContractError, match=r"TRL's GRPOTrainer's `_generate` now returns 9 values; tagrpo expects "
                                            r"8: \(prompt_ids"):
        Generation.from_trl((*values, 8))


def test_arity_names_the_method_and_what_it_returns():
    fields = ("prompt_ids", "images", "multimodal_fields")
    assert arity((1, 2, 3), fields, "TRL's GRPOTrainer", "_tokenize_prompts") == (1, 2, 3)
    with pytest.raises(ContractError, match=r"^TRL's GRPOTrainer's `_tokenize_prompts` now returns a dict; tagrpo "
                                            r"expects 3: \(prompt_ids, images, multimodal_fields\)$"):
        arity({}, fields, "TRL's GRPOTrainer", "_tokenize_prompts")


def test_step_state_names_the_override_that_did_not_run():
    step = StepState(torch.zeros(2, dtype=torch.long), [["q"], ["q"]], [{}, {}], ["a", "a"])  # (R,) R=2
    with pytest.raises(ContractError, match=r"did not call `_generate` before it returned, so tagrpo has no "
                                            r"`generated`"):
        step.need("generated")
    with pytest.raises(ContractError, match=r"did not call `_calculate_rewards`"):
        step.need("rewards")
    step.generated = torch.ones(2, dtype=torch.bool)  # (R,)
    assert step.need("generated").all()


# ---- behaviour: a tiny TRL step --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def record(model_dirs, tmp_path_factory):
    from trainer_utils import trl_trainer

    trainer = trl_trainer(model_dirs["qwen3"], tmp_path_factory.mktemp("trl"), num_generations=4)
    return record_step(trainer)


def test_installed_trl_behaves_as_relied_on(record):
    broken = problems(behaviour_clauses(record))
    assert not broken, "\n".join(broken)
    assert [name for name, _ in record.calls] == ["_generate", "_calculate_rewards"]
    assert record.output["advantages"].abs().sum() > 0  # mixed rewards: the advantage clause compared numbers


def _changed(record, **fields):
    return problems(behaviour_clauses(dataclasses.replace(record, **fields)))


def _output(record, **keys):
    return {**record.output, **keys}


def test_a_generate_of_another_length_or_order_is_named(record):
    assert _changed(record, generated=(*record.generated, None)) == [
        "TRL's GRPOTrainer's `_generate` now returns 9 values; tagrpo expects 8: (prompt_ids, completion_ids, "
        "tool_mask, completions, logprobs, extra_fields, images, tool_images)",
    ]
    swapped = list(record.generated)
    swapped[4], swapped[5] = swapped[5], swapped[4]  # logprobs and extra_fields trade places
    assert _changed(record, generated=tuple(swapped)) == [
        "TRL's GRPOTrainer's `_generate` now returns a dict at position 4, where tagrpo reads `logprobs`: None with "
        "transformers generation",
    ]


def test_a_step_that_calls_generate_twice_or_scores_elsewhere_is_named(record):
    twice = [record.calls[0], *record.calls]
    assert _changed(record, calls=twice)[0] == (
        "TRL's GRPOTrainer's `_generate_and_score_completions` now calls `_generate` 2 times; tagrpo expects one call "
        "with the batch's 8 prompts, where it generates each row's variant"
    )
    assert _changed(record, calls=record.calls[:1]) == [
        "TRL's GRPOTrainer's step now calls (_generate); tagrpo expects one call to `_calculate_rewards` after "
        "`_generate`, with its completions and completion ids",
    ]


def test_a_step_output_other_than_relied_on_is_named(record):
    assert _changed(record, output={k: v for k, v in record.output.items() if k != "num_items_in_batch"}) == [
        "TRL's GRPOTrainer's `_generate_and_score_completions` no longer returns the keys ['num_items_in_batch'] (it "
        "returns ['advantages', 'completion_ids', 'completion_mask', 'prompt_ids', 'prompt_mask'])",
    ]
    retokenized = _output(record, prompt_ids=record.output["prompt_ids"].roll(1, dims=1))  # (R, P)
    assert _changed(record, output=retokenized) == [
        "TRL's GRPOTrainer's `_generate_and_score_completions` no longer returns as `prompt_ids` the prompt tokens "
        "`_generate` returned, which is how tagrpo's anchored prompt conditions the loss",
    ]
    counted = _output(record, num_items_in_batch=record.output["num_items_in_batch"] + 1)
    assert _changed(record, output=counted)[0].endswith(
        "now returns a `num_items_in_batch` other than the completion mask's sum, which tagrpo recomputes for "
        "adaptive pools"
    )


def test_advantages_of_another_normalisation_are_named(record):
    rescaled = _output(record, advantages=record.output["advantages"] * 2)  # (R,)
    broken = _changed(record, output=rescaled, logged_advantages=(record.output["advantages"] * 2).tolist())
    assert len(broken) == 1 and broken[0].startswith(
        "TRL's GRPOTrainer's advantages are no longer (r - group mean) / (group std + 0.0001) over groups of "
        "`num_generations` rows (largest difference "
    )
    assert _changed(record, logged_advantages=[0.0] * len(record.logged_advantages)) == [
        "TRL's GRPOTrainer's `_logs['advantages']` no longer ends with the step's advantages, which tagrpo replaces "
        "where it recomputes them",
    ]


def test_a_completions_table_other_than_relied_on_is_named(record):
    assert record.logged_prompts == record.prompts and record.logged_extra == list(range(len(record.prompts)))
    assert _changed(record, logged_prompts=record.prompts[::-1]) == [
        "TRL's GRPOTrainer's `_logs['prompt']` no longer ends with the step's prompts, which tagrpo replaces by the "
        "prompts that generated each row",
    ]
    assert _changed(record, logged_extra=None) == [
        "TRL's GRPOTrainer's step no longer moves the values given to `_log_completion_extra` before it into "
        "`_logs['extra']`, where tagrpo puts each row's variant",
    ]
    assert "TRL's GRPOTrainer's `_log_completion_extra` is gone" in problems(class_clauses(type("Bare", (), {})))


def test_results_of_another_shape_are_named(record):
    assert _changed(record, rewards=record.rewards[:, 0]) == [
        "TRL's GRPOTrainer's `_calculate_rewards` now returns a (8,) tensor; tagrpo expects a (8, 1) tensor",
    ]
    assert _changed(record, metrics={"train": {}}) == [
        "TRL's GRPOTrainer's `_metrics['train']` is now a dict; tagrpo appends its series to a defaultdict(list) "
        "holding TRL's (`reward`)",
    ]
    assert _changed(record, logps=record.logps[:2]) == [
        "TRL's GRPOTrainer's `_get_per_token_logps_and_entropies` now returns 2 values; tagrpo expects 3: (logps, "
        "entropies, aux_loss)",
    ]
    assert _changed(record, tokenized={"prompt_ids": record.tokenized[0]}) == [
        "TRL's GRPOTrainer's `_tokenize_prompts` now returns a dict; tagrpo expects 3: (prompt_ids, images, "
        "multimodal_fields)",
    ]
    assert isinstance(record.metrics["train"], defaultdict)


def test_a_changed_method_on_a_live_trl_trainer_is_named(model_dirs, tmp_path):
    """The whole check on a running TRL whose scoring method returns one value less."""
    from trainer_utils import trl_trainer

    trainer = trl_trainer(model_dirs["qwen3"], tmp_path, num_generations=4)
    scoring = trainer._get_per_token_logps_and_entropies

    def changed(*args, **kwargs):
        return scoring(*args, **kwargs)[:2]

    trainer._get_per_token_logps_and_entropies = changed
    assert behaviour(trainer) == [
        "TRL's GRPOTrainer's `_get_per_token_logps_and_entropies` now returns 2 values; tagrpo expects 3: (logps, "
        "entropies, aux_loss)",
    ]
