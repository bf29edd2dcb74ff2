"""``share_prompt_prefix`` (``tagrpo.trainer.prefix``): each distinct prompt of a scoring chunk runs once; the
log-probs, entropies and gradients are TRL's own, from fewer tokens."""

from __future__ import annotations

import contextlib

import pytest
import torch
from conftest import pool_rows
from trainer_utils import make_config, make_trainer
from trl import GRPOTrainer

import tagrpo.generation as generation
import tagrpo.trainer.trainer as trainer_module
from tagrpo.common.errors import InputError
from tagrpo.generation import distinct_rows, shared_prefix_cache, shared_prompt_generation
from tagrpo.trainer.trainer import _shareable


def test_distinct_rows_by_ids_and_mask_in_order_of_first_occurrence():
    ids = torch.tensor([[0, 5, 6], [0, 5, 6], [7, 8, 9], [0, 5, 6], [7, 8, 9]])  # (R, P)
    mask = torch.tensor([[0, 1, 1], [0, 1, 1], [1, 1, 1], [1, 1, 1], [1, 1, 1]])  # (R, P): row 3 is not row 0
    first, inverse = distinct_rows(ids, mask)
    assert first.tolist() == [0, 2, 3] and inverse.tolist() == [0, 0, 1, 2, 1]


def test_only_text_calls_without_an_moe_loss_are_shared():
    ids = torch.zeros(2, 5, dtype=torch.long)  # (R, P + T)
    plain = {"self": None, "model": None, "input_ids": ids, "attention_mask": ids, "logits_to_keep": 3}
    assert _shareable(plain)
    assert _shareable({**plain, "compute_aux_loss": False, "pixel_values": None})
    assert not _shareable({**plain, "compute_aux_loss": True})
    assert not _shareable({**plain, "pixel_values": torch.zeros(2, 3)})


def test_the_prefix_cache_runs_the_common_start_once_and_each_rest_once(model_dirs):
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dirs["llama"]).eval()
    ids = torch.tensor([[0, 0, 9, 8, 7, 5], [9, 8, 7, 6, 4, 3], [0, 0, 0, 9, 8, 6]])  # (U, P) left-padded
    mask = (torch.arange(6) >= torch.tensor([[2], [0], [3]])).long()  # (U, P)
    seen: list[tuple] = []
    hook = model.get_input_embeddings().register_forward_hook(lambda m, i, o: seen.append(tuple(i[0].shape)))
    built = shared_prefix_cache(model, ids, mask)
    hook.remove()
    # all begin 9 8 (2 tokens, once); the rests but their last tokens: [7], [7 6 4], [] -> left-padded to 3
    assert seen == [(1, 2), (3, 3)]
    assert built.ids.tolist() == [[9, 8, 0, 0, 7], [9, 8, 7, 6, 4], [9, 8, 0, 0, 0]]
    assert built.mask.tolist() == [[1, 1, 0, 0, 1], [1, 1, 1, 1, 1], [1, 1, 0, 0, 0]]
    assert built.last.tolist() == [5, 3, 6] and built.length.tolist() == [4, 6, 3]
    assert built.cache.get_seq_length() == 5
    single = shared_prefix_cache(model, torch.tensor([[4, 5, 6]]), torch.ones(1, 3, dtype=torch.long))
    assert single.ids.tolist() == [[4, 5]] and single.last.tolist() == [6]  # one prompt: all its start is common
    assert shared_prefix_cache(model, torch.tensor([[0, 4], [0, 5]]), torch.tensor([[0, 1], [0, 1]])) is None


def test_the_config_refuses_gradient_checkpointing(tmp_path):
    with pytest.raises(InputError, match="share_prompt_prefix=True needs gradient_checkpointing=False"):
        make_config(tmp_path, share_prompt_prefix=True, gradient_checkpointing=True)


def _chunk(trainer, pad_id: int):
    """Six rows: three prompts of different lengths (left-padded), two rows each, completions with padding."""
    g = torch.Generator().manual_seed(0)
    vocab = trainer.model.config.vocab_size
    start = torch.randint(3, vocab, (3,), generator=g).tolist()
    prompts = [start + t for t in ([11, 12], [13, 14, 15, 16], [17])]  # 5, 7 and 4 tokens, 3 of them common
    rows = [prompts[i // 2] for i in range(6)]
    width, t = 7, 4
    prompt_ids = torch.tensor([[pad_id] * (width - len(p)) + p for p in rows])  # (R, P)
    prompt_mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in rows])  # (R, P)
    completion = torch.randint(3, vocab, (6, t), generator=g)  # (R, T)
    lengths = torch.tensor([4, 2, 3, 4, 1, 4])  # (R,)
    completion_mask = (torch.arange(t) < lengths.unsqueeze(1)).long()  # (R, T)
    completion = completion.masked_fill(completion_mask == 0, pad_id)
    return torch.cat([prompt_ids, completion], 1), torch.cat([prompt_mask, completion_mask], 1), completion_mask, t


@pytest.mark.parametrize("arch", ["llama", "qwen3"])
def test_same_log_probs_entropies_and_gradients_as_trl_from_fewer_tokens(model_dirs, tmp_path, arch):
    trainer = make_trainer(model_dirs[arch], pool_rows(num_questions=2), tmp_path, share_prompt_prefix=True,
                           gradient_checkpointing=False, bf16=False)  # fp32: equal up to rounding
    model, pad_id = trainer.model, trainer.processing_class.pad_token_id
    ids, mask, completion_mask, t = _chunk(trainer, pad_id)  # (R, P + T), (R, P + T), (R, T)
    tokens: list[int] = []
    hook = model.get_input_embeddings().register_forward_hook(lambda m, i, o: tokens.append(i[0].numel()))
    results = {}
    for name, fn in (("trl", GRPOTrainer._get_per_token_logps_and_entropies), ("shared", None)):
        model.zero_grad(set_to_none=True)
        tokens.clear()
        call = fn or trainer._get_per_token_logps_and_entropies
        args = (trainer, model) if fn else (model,)
        logps, entropies, aux = call(*args, ids, mask, t, batch_size=4, compute_entropy=True)  # (R, T) each
        (logps * completion_mask).sum().backward()
        grads = torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])
        results[name] = (logps.detach(), entropies.detach(), grads, list(tokens), aux)
    hook.remove()
    trl, shared = results["trl"], results["shared"]
    torch.testing.assert_close(shared[0] * completion_mask, trl[0] * completion_mask, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(shared[1] * completion_mask, trl[1] * completion_mask, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(shared[2], trl[2], atol=1e-5, rtol=1e-4)
    assert shared[4] is None and bool((shared[0][completion_mask == 0] == 0).all())
    # chunks of 4 and 2 rows: TRL runs every row's 11 columns. Shared, rows 0-3 (2 prompts): the 3 common tokens
    # once, the rests but their last tokens ([11], [13 14 15]) left-padded to 3, then every row's last prompt token
    # + 4 completion tokens; rows 4-5 (1 prompt): its first 3 tokens, nothing else to cache, then the rows
    assert trl[3] == [4 * 11, 2 * 11]
    assert shared[3] == [1 * 3, 2 * 3, 4 * 5, 1 * 3, 2 * 5]


@pytest.mark.parametrize("arch", ["llama", "qwen3"])
def test_shared_generation_draws_the_same_samples_and_undoes_its_patch(model_dirs, arch):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(model_dirs[arch]).eval()  # fp32
    tok = AutoTokenizer.from_pretrained(model_dirs[arch])
    texts = ["Tom has 3 apples.", "Tom has 3 apples.", "Tom has a longer question?", "Tom has 3 apples."]
    enc = tok(texts, return_tensors="pt", padding=True, padding_side="left")
    draws, prefills = [], []
    for shared in (False, True):
        torch.manual_seed(0)
        with shared_prompt_generation(model) if shared else contextlib.nullcontext():
            if shared:
                hook = model.get_input_embeddings().register_forward_hook(
                    lambda m, i, o: prefills.append(tuple(i[0].shape)))
            out = model.generate(**enc, do_sample=True, max_new_tokens=5, pad_token_id=tok.pad_token_id)
            if shared:
                hook.remove()
        draws.append(out)
    assert torch.equal(draws[0], draws[1])
    common = len(tok("Tom has ")["input_ids"])
    rest = max(len(tok(t)["input_ids"]) for t in texts) - common - 1
    assert prefills[:3] == [(1, common), (2, rest), (4, 1)]  # "Tom has " once, the 2 prompts' rests, one token a row
    assert "generate" not in model.__dict__


def test_a_training_run_scores_through_the_shared_path_and_matches_trls(model_dirs, tmp_path, monkeypatch):
    calls, prefills = [], []
    original, cache = trainer_module.shared_prompt_scores, generation.shared_prefix_cache

    def counting(*args, **kwargs):
        calls.append(args[1].size(0))
        return original(*args, **kwargs)

    def prefilling(model, ids, mask):
        built = cache(model, ids, mask)
        prefills.append(ids.size(0))
        return built

    monkeypatch.setattr(trainer_module, "shared_prompt_scores", counting)
    monkeypatch.setattr(generation, "shared_prefix_cache", prefilling)
    weights = {}
    for shared in (False, True):
        trainer = make_trainer(model_dirs["llama"], pool_rows(num_questions=4), tmp_path / str(shared),
                               share_prompt_prefix=shared, gradient_checkpointing=False, num_iterations=2,
                               optim="sgd", learning_rate=0.5, bf16=False)
        trainer.train()
        weights[shared] = torch.cat([p.detach().flatten() for p in trainer.model.parameters()])
    # num_iterations=2: old log-probs (one chunk of 8 rows per step) and the policy's (8 rows, twice per step)
    # one generation batch of 16 rows: old log-probs in 2 chunks of 8, then 4 policy micro-steps of 8 rows; its
    # generation cached the 2 questions' 4 variants once each
    assert calls == [8] * 6
    assert prefills == [8]
    from transformers import AutoModelForCausalLM

    start = torch.cat([p.detach().flatten() for p in AutoModelForCausalLM.from_pretrained(model_dirs["llama"])
                       .parameters()])
    assert (weights[True] - start).abs().max() > 1e-2  # trained
    torch.testing.assert_close(weights[True], weights[False], atol=1e-5, rtol=1e-4)
