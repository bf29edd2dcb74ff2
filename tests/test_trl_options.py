"""TRL's GRPOConfig options and GRPOTrainer arguments under TA-GRPO (tagrpo.trainer.options): each supported one's
loss worked out by hand on a run with pools and q0 anchoring, each refused one refused in one line before a model
loads, and every loss type TRL offers classified."""

from __future__ import annotations

import copy
import re

import pytest
import torch
from conftest import pool_rows
from trainer_utils import hash_reward, make_config, make_trainer, spy
from transformers import AutoModelForCausalLM, AutoTokenizer
from trl import GRPOConfig

from tagrpo.common.errors import InputError
from tagrpo.trainer import TAGRPOTrainer
from tagrpo.trainer.options import LOSS_TYPES, REFUSED_LOSS_TYPES, REFUSED_TRAINER_ARGUMENTS

N, G, STEPS_PER_GENERATION, ACCUMULATION, MAX_LEN, BETA, EPS, EPS_HIGH = 3, 2, 4, 2, 6, 0.04, 0.2, 0.28
PROMPT = re.compile(r"Q(\d+) v(\d+):")


def _hand_logps(model, prompts: list[list[int]], completions: list[list[int]], width: int):
    """(B, width) log-probs and entropies of each completion after its prompt, by one plain forward of the rows
    (prompts of one length, completions padded on the right: a causal model's earlier positions do not see it)."""
    (length,) = {len(p) for p in prompts}
    ids = torch.tensor([p + c + [0] * (width - len(c)) for p, c in zip(prompts, completions, strict=True)])
    with torch.no_grad():
        logp = model(ids).logits[:, length - 1 : -1].float().log_softmax(-1)  # (B, width, V)
    picked = logp.gather(2, ids[:, length:].unsqueeze(2)).squeeze(2)  # (B, width)
    entropy = -(logp.exp() * logp).sum(-1)  # (B, width)
    return picked, entropy


def _run(model_dir, out, **options):
    """Two optimizer steps from one generation batch of 4 pools (32 rows), so the second step's ratios differ from
    1 and its KL from 0; returns the trainer, the generation's completions and, per loss call, the policy's
    weights, the inputs and TRL's loss."""
    eos = AutoTokenizer.from_pretrained(model_dir).eos_token_id
    trainer = make_trainer(model_dir, pool_rows(), out, steps_per_generation=STEPS_PER_GENERATION, max_steps=2,
                           max_completion_length=MAX_LEN, beta=BETA, epsilon=EPS, epsilon_high=EPS_HIGH, bf16=False,
                           generation_kwargs={"sequence_bias": [[[eos], 2.0]]}, **options)  # lengths 1..6
    generated, calls = [], []
    spy(trainer, "_generate_single_turn", generated)
    loss = trainer._compute_loss

    def recording(model, inputs):
        value = loss(model, inputs)
        weights = copy.deepcopy(trainer.accelerator.unwrap_model(model).state_dict())
        calls.append((weights, {k: v.detach().clone() for k, v in inputs.items() if torch.is_tensor(v)},
                      value.detach().clone()))
        return value

    trainer._compute_loss = recording
    trainer.train()
    ((_, _, (completions, _)),) = generated  # one generation for the two steps
    return trainer, completions, calls


def _hand_loss(model_dir, trainer, completions, calls, loss_type, level="token", entropy_quantile=1.0,
               scale="group", mask_truncated=False):
    """TRL's loss of every call, recomputed by hand: log-probs by plain forwards on q0's own tokens, advantages
    from the rewards over each pool, masks from the generated completions; checked on the way."""
    tok = trainer.processing_class
    eos, pad = tok.eos_token_id, tok.pad_token_id
    questions = {r["id"]: r for r in pool_rows()}
    width = calls[0][1]["completion_ids"].size(1)
    exact = {tuple(c + [pad] * (width - len(c))): c for c in completions}  # padded row -> generated completion

    rows = []  # every row of the generation batch: (call, index, question, variant, completion)
    for k, (_, inputs, _) in enumerate(calls):
        for i in range(inputs["completion_ids"].size(0)):
            prompt = inputs["prompt_ids"][i][inputs["prompt_mask"][i].bool()].tolist()
            q, v = PROMPT.match(tok.decode(prompt)).groups()
            assert v == "0" and prompt == tok(questions[f"q{q}"]["prompt"])["input_ids"]  # anchored on q0's tokens
            completion = exact[tuple(inputs["completion_ids"][i].tolist())]
            rows.append((k, i, f"q{q}", int(inputs["variant_index"][i]), completion))
    assert sorted((q, v) for _, _, q, v, _ in rows) == sorted((f"q{q}", n) for q in range(4) for n in range(N + 1)
                                                              for _ in range(G))  # whole pools, every variant

    rewards = {(k, i): hash_reward([tok.decode(c, skip_special_tokens=True)])[0] for k, i, _, _, c in rows}
    advantage = {}
    for q in questions:
        members = [(k, i) for k, i, qq, _, _ in rows if qq == q]
        r = torch.tensor([rewards[m] for m in members])  # (8,) the pool's rewards
        a = r - r.mean() if scale == "none" else (r - r.mean()) / (r.std() + 1e-4)
        advantage.update(zip(members, a.tolist(), strict=True))
    truncated = {(k, i): mask_truncated and c[-1] not in (eos, pad) for k, i, _, _, c in rows}
    assert not mask_truncated or 0 < sum(truncated.values()) < len(rows), "the check needs both kinds of row"
    total_tokens = sum(len(c) for k, i, _, _, c in rows if not truncated[(k, i)])

    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    reference = AutoModelForCausalLM.from_pretrained(model_dir).eval()  # the initial weights
    old = copy.deepcopy(model).eval()
    old.load_state_dict(calls[0][0])  # the policy that generated (no update before the first loss call)
    q0 = {q: tok(questions[q]["prompt"])["input_ids"] for q in questions}
    ratios = []
    for k, (weights, inputs, trl_loss) in enumerate(calls):
        model.load_state_dict(weights)
        mine = [(i, q, c) for kk, i, q, _, c in rows if kk == k]
        prompts, completions_k = [q0[q] for _, q, _ in mine], [c for _, _, c in mine]
        lp, ent = _hand_logps(model, prompts, completions_k, width)  # (B, T)
        old_lp = _hand_logps(old, prompts, completions_k, width)[0]  # (B, T)
        ref_lp = _hand_logps(reference, prompts, completions_k, width)[0]  # (B, T)
        m = torch.stack([(torch.arange(width) < len(c)).float() * (not truncated[(k, i)]) for i, _, c in mine])
        assert torch.equal(m, inputs["completion_mask"].float())
        a = torch.tensor([advantage[(k, i)] for i, _, _ in mine]).unsqueeze(1)  # (B, 1)
        torch.testing.assert_close(inputs["advantages"].unsqueeze(1), a, rtol=0, atol=1e-5)
        torch.testing.assert_close(inputs["old_per_token_logps"] * m, old_lp * m, rtol=1e-4, atol=1e-5)

        log_ratio = lp - old_lp  # (B, T)
        if level == "sequence":
            log_ratio = ((log_ratio * m).sum(-1) / m.sum(-1).clamp(min=1)).unsqueeze(1)  # (B, 1)
        ratio = log_ratio.exp()
        ratios.append(ratio[m.bool()] if level == "token" else ratio[m.sum(-1) > 0])
        per_token = -torch.min(ratio * a, ratio.clamp(1 - EPS, 1 + EPS_HIGH) * a)
        if entropy_quantile < 1:
            threshold = torch.quantile(ent[m.bool()], 1 - entropy_quantile)
            per_token = per_token * ((ent * m >= threshold) & m.bool())
        kl = torch.exp(ref_lp - lp) - (ref_lp - lp) - 1
        per_token = per_token + BETA * kl * ratio  # the KL weighted by the ratio (TRL's default)
        summed = (per_token * m).sum()
        expected = {
            "grpo": ((per_token * m).sum(-1) / m.sum(-1).clamp(min=1)).mean() / ACCUMULATION,
            "bnpo": summed / m.sum().clamp(min=1) / ACCUMULATION,
            "dr_grpo": summed / (m.size(0) * MAX_LEN) / ACCUMULATION,
            "dapo": summed / (total_tokens * ACCUMULATION / STEPS_PER_GENERATION),
        }[loss_type]
        torch.testing.assert_close(trl_loss, expected, rtol=1e-4, atol=1e-6)
    moved = torch.cat(ratios[2:])  # the second optimizer step
    assert (moved - 1).abs().max() > 0.05, "the check needs ratios away from 1"


@pytest.mark.parametrize("loss_type", LOSS_TYPES)
def test_each_supported_loss_type_equals_its_hand_worked_loss_with_pools_and_anchoring(model_dirs, tmp_path,
                                                                                        loss_type):
    trainer, completions, calls = _run(model_dirs["qwen3"], tmp_path, loss_type=loss_type)
    _hand_loss(model_dirs["qwen3"], trainer, completions, calls, loss_type)


@pytest.mark.parametrize("options", [
    dict(importance_sampling_level="sequence"),  # GSPO
    dict(top_entropy_quantile=0.3),
    dict(mask_truncated_completions=True),
    dict(scale_rewards="none", loss_type="dr_grpo"),  # Dr. GRPO
], ids=["gspo", "top_entropy_quantile", "mask_truncated_completions", "scale_rewards_none"])
def test_each_supported_option_equals_its_hand_worked_loss_with_pools_and_anchoring(model_dirs, tmp_path, options):
    trainer, completions, calls = _run(model_dirs["qwen3"], tmp_path, **options)
    _hand_loss(model_dirs["qwen3"], trainer, completions, calls, options.get("loss_type", "dapo"),
               level=options.get("importance_sampling_level", "token"),
               entropy_quantile=options.get("top_entropy_quantile", 1.0), scale=options.get("scale_rewards", "group"),
               mask_truncated=options.get("mask_truncated_completions", False))


def test_every_loss_type_trl_offers_is_supported_or_refused():
    listed = re.search(r"Supported values are (.*?)\. ", GRPOConfig.__dataclass_fields__["loss_type"].metadata["help"])
    offered = set(re.findall(r"'(\w+)'", listed.group(1)))
    assert {"dapo", "cispo", "vespo"} <= offered  # TRL 1.16's list was read
    assert offered == set(LOSS_TYPES) | set(REFUSED_LOSS_TYPES)


@pytest.mark.parametrize(("option", "message"), [
    (dict(loss_type="cispo"), r"loss_type='cispo' is refused by TAGRPOConfig: its weight is a clipped, detached ratio "
                              r"times the log-probs, not the clipped surrogate; not verified with pools and "
                              r"q0-anchored ratios; use one of: 'dapo', 'grpo', 'bnpo', 'dr_grpo'"),
    (dict(loss_type="sapo"), r"loss_type='sapo' is refused by TAGRPOConfig: its soft gate"),
    (dict(loss_type="luspo"), r"loss_type='luspo' is refused by TAGRPOConfig: a sequence-level loss"),
    (dict(loss_type="vespo"), r"loss_type='vespo' is refused by TAGRPOConfig: it weights sequences by the engine's"),
    (dict(loss_type="dapoo"), r"loss_type='dapoo' is not valid; expected one of: 'dapo', .*; did you mean 'dapo'\?"),
    (dict(scale_rewards="batch"), r"scale_rewards='batch' is refused by TAGRPOConfig: tagrpo normalises within each "
                                  r"question's pool .* has no batch-std form; use one of: 'group', 'none'"),
    (dict(importance_sampling_level="sentence"), r"importance_sampling_level='sentence' is not valid; expected one "
                                                 r"of: 'token', 'sequence'"),
    (dict(multi_objective_aggregation="normalize_then_sum"), r"multi_objective_aggregation='normalize_then_sum' is "
                                                             r"not valid"),
])
def test_a_refused_option_is_one_line_at_config_time(tmp_path, option, message):
    with pytest.raises(InputError, match=message) as err:
        make_config(tmp_path, **option)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("argument", sorted(REFUSED_TRAINER_ARGUMENTS))
def test_tools_environments_and_rollout_func_are_refused_before_a_model_loads(tmp_path, argument):
    value = {"tools": [lambda x: x], "environment_factory": object, "rollout_func": lambda prompts, trainer: {}}
    with pytest.raises(InputError, match=rf"^{argument} is refused by TAGRPOTrainer: [^\n]+$"):
        TAGRPOTrainer(str(tmp_path / "no-such-model"), [hash_reward], args=make_config(tmp_path),
                      **{argument: value[argument]})  # a model path that does not exist: it never got that far
