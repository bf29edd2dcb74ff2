"""``pool_mode="adaptive"``: rephrasings only for questions whose q0 group is uniform, every invariant kept."""

from __future__ import annotations

import json
import re
import zlib

import pytest
import torch
from conftest import pool_rows
from trainer_utils import make_trainer, spy

from tagrpo.trainer import TAGRPOConfig

N, G = 3, 2
PROMPT = re.compile(r"Q(\d+) v(\d+):")


def by_question(completions, id, **kwargs):
    """q0 always right, q1 always wrong (both uniform), the others by a checksum of the text (often mixed)."""
    out = []
    for c, q in zip(completions, id, strict=True):
        out.append(1.0 if q == "q0" else 0.0 if q == "q1" else float(zlib.crc32(c.encode()) % 2))
    return out


def _texts(trainer, ids, mask=None):
    rows = ids if mask is None else [i[m.bool()] for i, m in zip(ids, mask, strict=True)]
    return [trainer.processing_class.decode(r) for r in rows]


def test_adaptive_expands_exactly_the_uniform_questions(model_dirs, tmp_path):
    trainer = make_trainer(model_dirs["qwen3"], pool_rows(num_questions=4), tmp_path, reward=by_question,
                           pool_mode="adaptive", per_device_train_batch_size=16, gradient_accumulation_steps=2,
                           max_steps=1)
    generated, losses = [], []
    spy(trainer, "_generate_single_turn", generated)
    original = trainer._compute_loss

    def loss_spy(model, inputs):
        losses.append({k: v.detach().clone() for k, v in inputs.items() if torch.is_tensor(v)})
        return original(model, inputs)

    trainer._compute_loss = loss_spy
    trainer.train()

    (first, _, first_out), *second = generated
    seen = [PROMPT.match(t).groups() for t in _texts(trainer, first[0])]
    order = [int(q) for q, _ in seen[::G]]  # the questions of the batch, in their (shuffled) order
    assert seen == [(str(q), "0") for q in order for _ in range(G)] and sorted(order) == [0, 1, 2, 3]
    completions = trainer.processing_class.batch_decode(first_out[0], skip_special_tokens=True)
    q0_rewards = torch.tensor(by_question(completions, [f"q{q}" for q in order for _ in range(G)])).view(4, G)
    uniform = [q for k, q in enumerate(order) if len(set(q0_rewards[k].tolist())) == 1]
    assert {0, 1} <= set(uniform)
    expanded = [PROMPT.match(t).groups() for t in _texts(trainer, second[0][0][0])] if second else []
    assert expanded == [(str(q), str(n)) for q in order if q in uniform for n in range(1, N + 1) for _ in range(G)]

    steps = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    step = next(s for s in steps if "tagrpo/rollouts" in s)
    assert step["tagrpo/rollouts"] == 4 * G + len(uniform) * N * G  # rollouts actually generated
    assert step["tagrpo/expanded"] == len(uniform) / 4

    rows = {q: [] for q in order}  # TRL shuffles rows before the loss: find each one's question by its prompt
    for b in losses:
        prompts = _texts(trainer, b["prompt_ids"], b["prompt_mask"])
        texts = trainer.processing_class.batch_decode(b["completion_ids"], skip_special_tokens=True)
        for i, (prompt, text) in enumerate(zip(prompts, texts, strict=True)):
            q = int(PROMPT.match(prompt).group(1))
            rows[q].append((int(b["variant_index"][i]), text, float(b["advantages"][i]), b["completion_mask"][i]))
    for q, got in rows.items():
        assert sorted(n for n, *_ in got) == [n for n in range(N + 1) for _ in range(G)]  # the pool is whole
        trained = [(n, t, a) for n, t, a, m in got if m.any()]
        assert sorted({n for n, *_ in trained}) == (list(range(N + 1)) if q in uniform else [0])
        assert all(a == 0.0 for n, t, a, m in got if not m.any())  # never generated: no advantage, no loss
        r = torch.tensor(by_question([t for _, t, _ in trained], [f"q{q}"] * len(trained)))
        a = torch.tensor([a for *_, a in trained])
        if r.std() > 0:  # an independent recompute: standardise over the rows the question has
            assert torch.allclose(a, (r - r.mean()) / (r.std() + trainer.args.advantage_eps), atol=1e-6)
        else:
            assert (a == 0).all()  # uniform even over its whole pool: no gradient
    for batch in losses:  # every row that is trained is conditioned on q0
        texts = _texts(trainer, batch["prompt_ids"], batch["prompt_mask"])
        assert all(PROMPT.match(t).group(2) == "0" for t in texts)


def test_adaptive_mode_is_validated(tmp_path):
    with pytest.raises(ValueError, match="pool_mode='everything' is not valid; expected one of: 'full', 'adaptive'"):
        TAGRPOConfig(output_dir=str(tmp_path), pool_mode="everything", use_cpu=True, report_to=[])


def test_history_expands_the_questions_uniform_at_their_last_visit_in_one_call(model_dirs, tmp_path):
    trainer = make_trainer(model_dirs["qwen3"], pool_rows(num_questions=4), tmp_path, reward=by_question,
                           pool_mode="history", per_device_train_batch_size=16, gradient_accumulation_steps=2,
                           max_steps=2, save_strategy="steps", save_steps=1)
    generated = []
    spy(trainer, "_generate_single_turn", generated)
    trainer.train()
    assert len(generated) == 2  # one generation call per step

    uniform_after = []
    for args, _, out in generated:
        prompts = [PROMPT.match(t).groups() for t in _texts(trainer, args[0])]
        texts = trainer.processing_class.batch_decode(out[0], skip_special_tokens=True)
        q0 = {}
        for (q, n), text in zip(prompts, texts, strict=True):
            if n == "0":
                q0.setdefault(int(q), []).append(by_question([text], [f"q{q}"])[0])
        uniform_after.append({q for q, r in q0.items() if len(set(r)) == 1})
        order = list(dict.fromkeys(int(q) for q, _ in prompts))
        expand = set(order) if len(uniform_after) == 1 else uniform_after[0]  # not drawn yet: expanded
        assert prompts == [(str(q), str(n)) for q in order for n in range(N + 1 if q in expand else 1)
                           for _ in range(G)]
    assert {0, 1} <= uniform_after[0] != {0, 1, 2, 3}  # step 2 expands some questions, not all

    state = json.loads((tmp_path / "checkpoint-1" / "tagrpo_state.json").read_text())
    assert state["q0_uniform"] == {f"q{q}": q in uniform_after[0] for q in range(4)}

    resumed = make_trainer(model_dirs["qwen3"], pool_rows(num_questions=4), tmp_path / "resumed", reward=by_question,
                           pool_mode="history", per_device_train_batch_size=16, gradient_accumulation_steps=2,
                           max_steps=2)
    again = []
    spy(resumed, "_generate_single_turn", again)
    resumed.train(resume_from_checkpoint=str(tmp_path / "checkpoint-1"))
    assert len(again) == 1 and resumed.q0_uniform.keys() == state["q0_uniform"].keys()
    step2 = {int(q) for q, n in (PROMPT.match(t).groups() for t in _texts(resumed, again[0][0][0])) if n != "0"}
    assert step2 == uniform_after[0]  # the restored record decided the resumed step
    steps = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    rollouts = [s["tagrpo/rollouts"] for s in steps if "tagrpo/rollouts" in s]
    assert rollouts == [4 * (N + 1) * G, 4 * (N + 1) * G + 4 * G + len(uniform_after[0]) * N * G]
