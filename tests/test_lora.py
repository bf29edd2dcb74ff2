"""TA-GRPO with a LoRA adapter (PEFT) on a tiny random Qwen3, on CPU: where the log-probs are conditioned, what
trains, the contract clause on the reference, the job keys, a resume after ``kill -9``, and ``tagrpo eval`` of an
adapter directory."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest
import torch
from conftest import pool_rows
from datasets import Dataset
from peft import LoraConfig
from trainer_utils import hash_reward, make_config, spy
from transformers import AutoModelForCausalLM, AutoTokenizer
from trl import GRPOConfig, GRPOTrainer
from trl.trainer.utils import pad

from tagrpo.common.contracts import problems
from tagrpo.trainer import TAGRPOTrainer
from tagrpo.trainer.contract import behaviour_clauses, record_step
from tagrpo.trainer.lora import lora_config
from tagrpo.trainer.run import TrainJob, split_config

PROMPT = re.compile(r"Q(\d+) v(\d+):")


def lora(**overrides):
    return LoraConfig(**{"r": 4, "lora_alpha": 8, "lora_dropout": 0.0, "task_type": "CAUSAL_LM", **overrides})


def lora_trainer(model_dir, out, rows=None, **overrides):
    args = make_config(out, bf16=False, **overrides)  # fp32, as the separately loaded base computes
    return TAGRPOTrainer(model=model_dir, reward_funcs=[hash_reward], args=args,
                         train_dataset=Dataset.from_list(rows or pool_rows()),
                         processing_class=AutoTokenizer.from_pretrained(model_dir), peft_config=lora())


def plain_logps(model, prompt_ids, prompt_mask, completion_ids, completion_mask):
    """(R, T) log-probs of the completions after the prompts, by a plain forward pass of ``model``."""
    ids = torch.cat([prompt_ids, completion_ids], 1)  # (R, P+T)
    mask = torch.cat([prompt_mask, completion_mask], 1)  # (R, P+T)
    with torch.no_grad():
        logits = model(input_ids=ids, attention_mask=mask).logits[:, prompt_ids.size(1) - 1 : -1]  # (R, T, V)
    return logits.log_softmax(-1).gather(-1, completion_ids.unsqueeze(-1)).squeeze(-1)  # (R, T)


def trainer_logps(trainer, prompt_ids, prompt_mask, completion_ids, completion_mask):
    """(R, T) log-probs of the completions under the trainer's policy (adapter enabled), as TRL computes them."""
    with torch.no_grad():
        return trainer._get_per_token_logps_and_entropies(
            trainer.model, torch.cat([prompt_ids, completion_ids], 1), torch.cat([prompt_mask, completion_mask], 1),
            completion_ids.size(1),
        )[0]  # (R, T)


def left_padded(token_lists, pad_id):
    """(R, P) ids and mask of token lists, padded on the left as TRL pads prompts."""
    rows = [torch.tensor(t) for t in token_lists]
    return (pad(rows, padding_value=pad_id, padding_side="left"),
            pad([torch.ones_like(t) for t in rows], padding_value=0, padding_side="left"))


def close(a, b, mask) -> bool:
    return torch.allclose(a[mask], b[mask], atol=1e-5)


@pytest.mark.slow
def test_anchored_logprobs_are_on_q0_reference_is_the_base_and_only_the_adapter_trains(model_dirs, tmp_path):
    """One pool per micro-batch and two per generation: the second generation comes after two optimizer steps, so
    the adapter differs from the base there, and the old log-probs (computed: two steps per generation) are the
    adapter's while the reference log-probs are the base's."""
    model_dir = model_dirs["qwen3"]
    trainer = lora_trainer(model_dir, tmp_path, beta=0.01, gradient_accumulation_steps=1, steps_per_generation=2,
                           max_steps=4)
    base = AutoModelForCausalLM.from_pretrained(model_dir).eval()  # loaded separately, never trained
    tok = trainer.processing_class
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    generated, checks, loss_prompts = [], [], []
    spy(trainer, "_generate_single_turn", generated)
    step = trainer._generate_and_score_completions

    def checked_step(inputs):
        out = step(inputs)  # the model has not moved since it generated these rows
        done = out["completion_mask"].bool()  # (R, T)
        q0 = (out["prompt_ids"], out["prompt_mask"])  # (R, P), (R, P): the anchored prompts
        completion = (out["completion_ids"], out["completion_mask"])  # (R, T), (R, T)
        generating = left_padded(generated[-1][0][0], tok.pad_token_id)  # (R, P'), (R, P')
        rephrased = (out["variant_index"] > 0).unsqueeze(1) & done  # (R, T) rows generated from a rephrasing
        policy_q0 = trainer_logps(trainer, *q0, *completion)  # (R, T)
        base_q0, base_qn = plain_logps(base, *q0, *completion), plain_logps(base, *generating, *completion)
        checks.append({
            "prompts": {PROMPT.match(tok.decode(ids[m.bool()])).group(2) for ids, m in zip(*q0, strict=True)},
            "old_is_policy_on_q0": close(out["old_per_token_logps"], policy_q0, done),
            "old_is_not_on_qn": not close(out["old_per_token_logps"],
                                          trainer_logps(trainer, *generating, *completion), rephrased),
            "ref_is_base_on_q0": close(out["ref_per_token_logps"], base_q0, done),
            "ref_is_not_on_qn": not close(out["ref_per_token_logps"], base_qn, rephrased),
            "adapter_differs_from_base": not close(policy_q0, base_q0, done),
        })
        return out

    trainer._generate_and_score_completions = checked_step
    compute_loss = trainer._compute_loss

    def loss_spy(model, inputs):
        texts = [tok.decode(ids[m.bool()]) for ids, m in zip(inputs["prompt_ids"], inputs["prompt_mask"], strict=True)]
        loss_prompts.extend(PROMPT.match(t).group(2) for t in texts)
        return compute_loss(model, inputs)

    trainer._compute_loss = loss_spy
    trainer.train()

    assert len(checks) == 2 and all(c["prompts"] == {"0"} for c in checks)
    assert all(c[k] for c in checks for k in ("old_is_policy_on_q0", "old_is_not_on_qn", "ref_is_base_on_q0",
                                              "ref_is_not_on_qn")), checks
    assert checks[1]["adapter_differs_from_base"]  # so the reference above cannot have been the adapted policy
    assert len(loss_prompts) == 32 and set(loss_prompts) == {"0"}  # the current log-probs, in the loss, on q0
    for (args, _, _) in generated:  # pools whole: 8 consecutive rows of one question, variants 0,0,1,1,2,2,3,3
        found = [PROMPT.match(tok.decode(ids)).groups() for ids in args[0]]
        for start in range(0, len(found), 8):
            pool = found[start : start + 8]
            assert len({q for q, _ in pool}) == 1 and [int(v) for _, v in pool] == [0, 0, 1, 1, 2, 2, 3, 3], pool

    changed = {n for n, p in trainer.model.named_parameters() if not torch.equal(before[n], p.detach())}
    trainable = {n for n, p in trainer.model.named_parameters() if p.requires_grad}
    assert changed and changed == trainable and all(".lora_" in n for n in changed)
    probe = torch.tensor([tok.encode("Q1 v0: what is 1+1?")])  # (1, L)
    with torch.no_grad(), trainer.model.disable_adapter():
        assert torch.equal(trainer.model(input_ids=probe).logits, base(input_ids=probe).logits)


def test_trl_reference_with_an_adapter_disabled_holds_the_contract_clause(model_dirs, tmp_path):
    config = GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=8, num_generations=4, beta=0.01,
                        max_completion_length=6, report_to=[], use_cpu=True, bf16=False, disable_tqdm=True, seed=0)
    trainer = GRPOTrainer(model_dirs["qwen3"], [hash_reward], args=config, train_dataset=Dataset.from_list(pool_rows()),
                          peft_config=lora(init_lora_weights=False))  # a random adapter: policy != base from the start
    record = record_step(trainer)
    assert problems(behaviour_clauses(record)) == []
    mask = record.output["completion_mask"].bool()  # (R, T)
    assert not close(record.reference, record.logps[0], mask)  # the reference is not the adapted policy
    adapted = {**record.output, "ref_per_token_logps": record.logps[0]}  # a TRL whose reference kept the adapter
    assert problems(behaviour_clauses(dataclasses.replace(record, output=adapted))) == [
        "TRL's GRPOTrainer's `ref_per_token_logps` are no longer the reference's log-probs (the reference model, or "
        "the policy with its adapter disabled) on the step's `prompt_ids`, where tagrpo puts the anchored prompt",
    ]


def test_lora_job_keys_make_a_lora_config_and_bad_ones_give_one_line(tmp_path):
    base = {"model": "m", "data": "d", "output_dir": str(tmp_path)}
    job, _ = split_config({**base, "use_peft": True, "lora_r": 8, "lora_alpha": 16, "lora_dropout": 0.1,
                           "lora_target_modules": ["q_proj", "v_proj"]})
    config = lora_config(job)
    assert (config.r, config.lora_alpha, config.lora_dropout) == (8, 16, 0.1)
    assert config.target_modules == {"q_proj", "v_proj"} and config.task_type == "CAUSAL_LM"
    assert lora_config(split_config({**base, "use_peft": True, "lora_target_modules": ["all-linear"]})[0]
                       ).target_modules == "all-linear"
    assert lora_config(split_config(base)[0]) is None
    with pytest.raises(ValueError, match=r"^lora_r, lora_alpha given without use_peft=true, which trains a LoRA"):
        split_config({**base, "lora_r": 8, "lora_alpha": 16})
    with pytest.raises(ValueError, match=r"^lora_r must be >= 1, got 0$"):
        lora_config(TrainJob(model="m", data="d", use_peft=True, lora_r=0))
    with pytest.raises(ValueError, match=r"^lora_dropout must be in \[0, 1\), got 1.0$"):
        lora_config(TrainJob(model="m", data="d", use_peft=True, lora_dropout=1.0))


# ---- the command line: evaluate the adapter (kill -9 and resume with LoRA: tests/test_resume.py) ---------------
@pytest.mark.slow
def test_eval_reads_a_checkpoint_adapter_as_its_merged_model(tmp_path):
    from peft import PeftModel

    from tagrpo.cli import main
    from tagrpo.evaluation.engines import TransformersEngine
    from tagrpo.evaluation.run import EvalConfig, run_eval
    from tagrpo.toy.pretrain import SHIPPED

    base_dir = str(SHIPPED)  # the embedded world's pretrained base: pass@k on toy_world is not all zero
    lora_trainer(base_dir, tmp_path / "run", max_steps=2, save_strategy="steps", save_steps=2,
                 learning_rate=1e-3).train()
    adapter = tmp_path / "run" / "checkpoint-2"
    assert (adapter / "adapter_config.json").exists() and not (adapter / "model.safetensors").exists()
    base = AutoModelForCausalLM.from_pretrained(base_dir)
    merged = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base_dir), str(adapter)).merge_and_unload()
    merged.save_pretrained(tmp_path / "merged")
    AutoTokenizer.from_pretrained(base_dir).save_pretrained(tmp_path / "merged")

    loaded = TransformersEngine(str(adapter)).model.state_dict()
    assert loaded.keys() == merged.state_dict().keys()
    assert all(torch.equal(loaded[k], v) for k, v in merged.state_dict().items())
    assert any(not torch.equal(loaded[k], v) for k, v in base.state_dict().items())  # the adapter was applied

    flags = ["--benchmarks", "toy_world", "--n", "4", "--k", "1,2,4", "--template", "plain", "--max-new-tokens", "32",
             "--limit", "6", "--engine", "transformers"]
    assert main(["eval", "--model", str(adapter), "--output-dir", str(tmp_path / "eval_adapter"), *flags]) == 0
    via_cli = json.loads((tmp_path / "eval_adapter" / "report.json").read_text())["benchmarks"]["toy_world"]
    direct = run_eval(EvalConfig(model=str(tmp_path / "merged"), benchmarks="toy_world", n=4, k="1,2,4",
                                 template="plain", max_new_tokens=32, limit=6, engine="transformers",
                                 output_dir=str(tmp_path / "eval_merged")))["benchmarks"]["toy_world"]
    assert via_cli["pass_at_k"] == direct["pass_at_k"] and via_cli["questions"] == 6
    assert via_cli["pass_at_k"]["4"] > 0  # an equality of working models, not of two that never answer
    assert (tmp_path / "eval_adapter" / "toy_world" / "counts.jsonl").read_text() == (
        tmp_path / "eval_merged" / "toy_world" / "counts.jsonl").read_text()


def test_adapter_directories_are_checked_with_their_base(model_dirs, tmp_path):
    from tagrpo.models import adapter_base, check_model
    from tagrpo.trainer.run import run_train

    good, orphan = tmp_path / "good", tmp_path / "orphan"
    for folder, base in ((good, model_dirs["qwen3"]), (orphan, str(tmp_path / "gone"))):
        folder.mkdir()
        (folder / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": base}))
    assert adapter_base(str(good)) == model_dirs["qwen3"] and adapter_base(model_dirs["qwen3"]) is None
    assert check_model(str(good)) == str(good)
    with pytest.raises(ValueError, match=rf"^model '{orphan}' is a LoRA adapter whose base cannot be loaded: model "):
        check_model(str(orphan))
    job, config = split_config({"model": str(good), "data": "d", "output_dir": str(tmp_path / "out")})
    with pytest.raises(ValueError, match=rf"^model '{good}' is a LoRA adapter; train from its base model="):
        run_train(job, config)
