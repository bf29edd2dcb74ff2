"""``tagrpo train`` for 3 TA-GRPO steps on SmolLM2-135M-Instruct with its chat template (N=3, G=2)."""

from __future__ import annotations

import json
import zlib

import pytest
import torch

from tagrpo.data.prompts import format_prompt
from tagrpo.toy.world import question_rows
from tagrpo.trainer.run import load_config, run_train, split_config
from tagrpo.trainer.trainer import TAGRPOTrainer


def parity_reward(completions, **kwargs):
    return [float(zlib.crc32(str(c).encode()) % 2) for c in completions]


@pytest.mark.parametrize("anchor", ["original", "none"])
def test_three_steps_pools_whole_and_loss_conditioned_as_anchor_says(smollm2, tmp_path, monkeypatch, anchor):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    rows = question_rows(3, seed=0, num_rephrasings=3)
    data = tmp_path / "toy.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    seen = []
    original = TAGRPOTrainer._compute_loss

    def spy(self, model, inputs):
        seen.append({k: inputs[k].detach().cpu() for k in ("prompt_ids", "prompt_mask", "variant_index")})
        return original(self, model, inputs)

    monkeypatch.setattr(TAGRPOTrainer, "_compute_loss", spy)
    # A 135M model rarely boxes the right answer in 16 tokens: a mixed, deterministic reward makes the
    # advantages non-zero, so that the parameters must move (the reward is not what this test is about).
    monkeypatch.setattr("tagrpo.trainer.run.get_reward", lambda name: parity_reward)
    overrides = [f"model={smollm2}", f"data={data}", f"output_dir={tmp_path / 'run'}", "chat_template=true",
                 "num_rephrasings=3", "num_generations=2", "max_steps=3", "max_completion_length=8",
                 f"anchor={anchor}", "learning_rate=1e-4", "logging_steps=1", "report_to=[]", "save_strategy=no",
                 "disable_tqdm=true"]
    job, config = split_config(load_config(None, overrides))
    trainer = run_train(job, config)

    tok = AutoTokenizer.from_pretrained(smollm2)
    chat = {  # every variant's chat-formatted prompt text, as the tokenizer renders it
        text: tok.apply_chat_template(format_prompt(text, "paper", chat=True), add_generation_prompt=True,
                                      tokenize=False)
        for r in rows for text in [r["prompt"], *r["rephrasings"]]
    }
    by_question = {r["id"]: [chat[t] for t in [r["prompt"], *r["rephrasings"]]] for r in rows}
    assert len(seen) == 3
    for inputs in seen:  # one pool (8 rows) per step: a question's q0 and its 3 rephrasings, 2 samples each
        texts = [tok.decode(ids[mask.bool()]) for ids, mask in zip(inputs["prompt_ids"], inputs["prompt_mask"],
                                                                      strict=True)]
        variant = inputs["variant_index"].tolist()  # TRL shuffles the rows of a batch before the loss
        assert sorted(variant) == [0, 0, 1, 1, 2, 2, 3, 3]
        question = next(q for q, variants in by_question.items() if set(texts) <= set(variants))
        for text, n in zip(texts, variant, strict=True):
            assert text == by_question[question][n if anchor == "none" else 0]

    steps = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    steps = [s for s in steps if "tagrpo/rollouts" in s]
    assert [s["tagrpo/rollouts"] for s in steps] == [8, 16, 24]
    assert all(torch.isfinite(torch.tensor(s["loss"])) for s in steps)
    assert all(k in steps[0] for k in ("tagrpo/pool/zero_std", "tagrpo/original/zero_std", "tagrpo/rescued"))
    base = AutoModelForCausalLM.from_pretrained(smollm2, dtype=torch.float32).state_dict()
    final = trainer.model.state_dict()
    assert any(not torch.equal(final[k].cpu().float(), base[k].float()) for k in base if k in final)
