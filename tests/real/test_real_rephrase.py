"""``tagrpo rephrase --backend openai`` against a real OpenAI-compatible server: ``transformers serve`` serving
SmolLM2-135M-Instruct on 127.0.0.1, started and stopped (by PID) by this module."""

from __future__ import annotations

import json

import pytest

from tagrpo.common.serving import free_port, start_transformers_serve, stop_server
from tagrpo.data.jsonl import read_jsonl
from tagrpo.rephrase import RephraseConfig, run_rephrase
from tagrpo.rephrase.checks import REASONS
from tagrpo.rephrase.run import RephraseFailed
from tagrpo.toy.world import question_rows


@pytest.fixture(scope="module")
def served(smollm2, tmp_path_factory):
    port, log = free_port(), tmp_path_factory.mktemp("serve") / "serve.log"
    try:
        proc = start_transformers_serve(smollm2, port, str(log), 180)
    except RuntimeError as failed:
        pytest.fail(f"{failed}: {log.read_text()[-2000:]}")
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        stop_server(proc, 20)


def test_rephrase_against_transformers_serve(served, smollm2, tmp_path):
    data = tmp_path / "toy.jsonl"
    rows = [{k: r[k] for k in ("id", "prompt", "answer")} for r in question_rows(3, seed=4, num_rephrasings=0)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out.jsonl"
    cfg = dict(data=str(data), n=2, base_url=served, model=smollm2, out=str(out), temperature=0.0, max_tokens=64,
               concurrency=2, timeout_s=120)
    try:
        summary = run_rephrase(RephraseConfig(**cfg))
    except RephraseFailed as err:  # a 135M model may break every rephrasing: then nothing is written ...
        assert "was accepted (" in str(err) and not out.exists()
        summary = None
    cache = read_jsonl(str(out) + ".cache.jsonl")  # ... but every reply is cached, tokens counted
    assert len(cache) == 6 and all(r["usage"][0] > 0 and 0 < r["usage"][1] <= 64 for r in cache)
    if summary is not None:
        assert summary["requests"] == 6 and summary["cost_usd"] is None  # a local server has no price
        assert summary["accepted"] + sum(summary["rejected_by_reason"].values()) == 6
        assert set(summary["rejected_by_reason"]) <= set(REASONS) and summary["limit_ignored"] == 0
        rejected = read_jsonl(str(out) + ".rejected.jsonl")
        assert all(r["reason"] in REASONS and r["detail"] for r in rejected)
    rerun_cfg = RephraseConfig(**{**cfg, "base_url": "http://127.0.0.1:9/v1"})  # nothing may be sent again
    try:
        again = run_rephrase(rerun_cfg)
        assert again["requests"] == 0 and again["from_cache"] == 6
    except RephraseFailed as err:
        assert summary is None and "no request" not in str(err)


def test_extra_body_makes_transformers_serve_sample(served, smollm2):
    """The docs' claim: ``transformers serve`` decodes SmolLM2 greedily whatever seed is sent, and samples with the
    ``--extra-body`` that ``DO_SAMPLE_FLAG`` prints (``DO_SAMPLE_BODY``)."""
    from openai import OpenAI

    from tagrpo.rephrase.config import DO_SAMPLE_BODY

    extra = RephraseConfig(extra_body=DO_SAMPLE_BODY).extra_fields()
    client = OpenAI(base_url=served, api_key="EMPTY", timeout=120)
    messages = [{"role": "user", "content": "Write one sentence about apples."}]

    def replies(body: dict) -> list[str]:
        return [client.chat.completions.create(model=smollm2, messages=messages, temperature=1.0, max_tokens=24,
                                               seed=seed, extra_body=body).choices[0].message.content
                for seed in range(4)]

    assert len(set(replies({}))) == 1  # greedy: four seeds, one reply
    assert len(set(replies(extra))) > 1
