"""``tagrpo eval`` on SmolLM2-135M-Instruct with its chat template: counts, pass@k, greedy reproducibility, report."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tagrpo.core import pass_at_k
from tagrpo.data.benchmarks import default_data_dir
from tagrpo.data.jsonl import read_jsonl
from tagrpo.evaluation.run import EvalConfig, run_eval

BENCHMARKS = "math500,toy_world" if default_data_dir() else "toy_world"


def test_eval_with_the_chat_template(smollm2, tmp_path):
    cfg = EvalConfig(model=smollm2, benchmarks=BENCHMARKS, n=4, k="1,2,4", limit=3, temperature=1.0, top_p=1.0,
                     max_new_tokens=48, chat_template=True, engine="transformers", output_dir=str(tmp_path))
    report = run_eval(cfg)
    for name in BENCHMARKS.split(","):
        counts = read_jsonl(str(tmp_path / name / "counts.jsonl"))
        n, c = np.array([r["n"] for r in counts]), np.array([r["correct"] for r in counts])
        assert len(counts) == 3 and (n == 4).all() and ((0 <= c) & (c <= n)).all()
        got = report["benchmarks"][name]["pass_at_k"]
        for k in (1, 2, 4):  # the report is the unbiased estimator over these very counts
            assert got[str(k)] == pytest.approx(float(pass_at_k(n, c, k).mean()))
    assert (tmp_path / "report.md").exists() and (tmp_path / "pass_at_k.png").stat().st_size > 10_000
    assert json.loads((tmp_path / "report.json").read_text())["config"]["chat_template"] is True


def test_greedy_decoding_is_reproducible_and_talks(smollm2):
    from tagrpo.data.prompts import render_prompt
    from tagrpo.evaluation.engines import TransformersEngine

    engine = TransformersEngine(smollm2)
    prompts = [render_prompt("What is 7+5?", engine.tokenizer, "plain", chat=True)]
    first = engine.generate(prompts, 2, 0.0, 1.0, 16, seeds=0)
    second = engine.generate(prompts, 2, 0.0, 1.0, 16, seeds=123)
    assert first == second and first[0][0] == first[0][1]  # greedy: the seed and the sample do not matter
    assert "12" in first[0][0]  # the converted model answers as SmolLM2-135M-Instruct does
