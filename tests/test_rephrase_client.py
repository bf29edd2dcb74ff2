"""The OpenAI-compatible backend against a real local HTTP server: retries, Retry-After, budgets, concurrency, key."""

from __future__ import annotations

import json
import logging
from collections import Counter, deque

import pytest
from conftest import KEY, write_rows
from openai_stub_server import StubServer

from tagrpo.rephrase import RephraseConfig, run_rephrase
from tagrpo.rephrase.client import retry_after


def config(tmp_path, server: StubServer, count: int = 4, **kw) -> RephraseConfig:
    values = dict(
        data=write_rows(tmp_path / "rows.jsonl", count),
        n=3,
        base_url=server.url,
        model="stub",
        out=str(tmp_path / "out" / "rephrased.jsonl"),
        concurrency=4,
        backoff_base_s=0.01,
        timeout_s=5.0,
    )
    values.update(kw)
    return RephraseConfig(**values)


def test_retries_500_malformed_and_timeouts(tmp_path, server):
    server.faults_by_key[("q1", "rename")] = deque(["500", "malformed", "slow:2"])
    summary = run_rephrase(config(tmp_path, server, timeout_s=0.5))
    assert Counter(server.keys())[("q1", "rename")] == 4
    assert summary["accepted"] == 12 and summary["retries"] == 3 and summary["requests"] == 15
    assert summary["request_errors"] == {"http_500": 1, "malformed": 1, "timeout": 1}


def test_a_reply_without_choices_is_retried_as_malformed(tmp_path, server):
    server.faults_by_key[("q0", "paraphrase")] = deque(["no_choices"])
    summary = run_rephrase(config(tmp_path, server, count=1, n=1))
    assert Counter(server.keys()) == {("q0", "paraphrase"): 2}
    assert summary["accepted"] == 1 and summary["retries"] == 1 and summary["request_errors"] == {"malformed": 1}


def test_gives_up_after_max_retries_and_reruns_the_failure(tmp_path, server):
    server.faults_by_key[("q0", "format")] = deque(["500"] * 2)
    summary = run_rephrase(config(tmp_path, server, max_retries=1))
    assert summary["failed"] == 1 and summary["by_type"]["format"]["failed"] == {"http_500": 1}
    assert summary["short_questions"] == 1
    again = run_rephrase(config(tmp_path, server, max_retries=1))
    assert again["requests"] == 1 and again["accepted"] == 12  # the failure was not cached; nothing else resent


def test_retry_after_is_honoured(tmp_path, server):
    server.faults_by_key[("q0", "paraphrase")] = deque(["429:1"])
    run_rephrase(config(tmp_path, server, count=1, n=1))
    times = [r["time"] for r in server.requests if (r["id"], r["type"]) == ("q0", "paraphrase")]
    assert len(times) == 2 and 1.0 <= times[1] - times[0] < 1.6  # backoff alone would wait ~0.01 s


def test_retry_after_parsing():
    assert retry_after({"retry-after": "2"}) == 2.0
    assert retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0
    assert retry_after({}) is None


def test_max_requests_stops_issuing_and_a_rerun_finishes(tmp_path, server):
    summary = run_rephrase(config(tmp_path, server, count=10, max_requests=7))
    assert len(server.requests) == 7 and summary["requests"] == 7
    assert summary["budget_stopped"] == "max_requests=7 reached"
    assert summary["accepted"] == 7 and summary["pending"] == 23 and summary["questions"] == 10
    summary = run_rephrase(config(tmp_path, server, count=10))
    assert summary["requests"] == 23 and summary["accepted"] == 30
    assert max(Counter(server.keys()).values()) == 1


def test_max_cost_stops_after_the_first_reply(tmp_path, server):
    summary = run_rephrase(config(tmp_path, server, concurrency=1, max_cost=1e-9, price_in=10.0, price_out=30.0))
    assert len(server.requests) == 1 and summary["budget_stopped"].startswith("max_cost=")
    assert summary["cost_usd"] > 0 and summary["pending"] == 11


def test_cost_counts_usage_at_the_configured_prices(tmp_path, server):
    summary = run_rephrase(config(tmp_path, server, count=2, n=1, price_in=1e6, price_out=0.0))
    assert summary["cost_usd"] == pytest.approx(summary["prompt_tokens"])


def test_requests_in_flight_are_bounded(tmp_path):
    with StubServer(latency_s=0.05) as server:
        run_rephrase(config(tmp_path, server, count=16, concurrency=5))
        assert len(server.requests) == 48 and server.max_in_flight == 5


def test_bad_key_stops_the_run(tmp_path, server):
    server.faults.extend(["401"] * 20)
    with pytest.raises(ValueError, match="HTTP 401"):
        run_rephrase(config(tmp_path, server, concurrency=1))
    assert len(server.requests) == 1


def test_key_from_the_environment_is_sent_but_never_logged_or_written(tmp_path, server, monkeypatch, caplog, capsys):
    monkeypatch.setenv("TAGRPO_TEST_KEY", KEY)
    caplog.set_level(logging.DEBUG)
    server.faults.extend(["429:0", "500"])
    server.answers = {f"q{i}": str(2 * i + 5) for i in range(4)}  # the solver answers right
    summary = run_rephrase(config(tmp_path, server, api_key_env="TAGRPO_TEST_KEY", solver="same"))
    assert summary["retries"] == 2
    assert {r["authorization"] for r in server.requests} == {f"Bearer {KEY}"}
    captured = capsys.readouterr()
    assert KEY not in caplog.text + captured.out + captured.err
    for path in tmp_path.rglob("*"):
        assert not path.is_file() or KEY.encode() not in path.read_bytes(), path


def test_dummy_key_for_a_local_server_and_none_for_the_default_url(tmp_path, server, monkeypatch):
    monkeypatch.delenv("TAGRPO_UNSET_KEY", raising=False)
    run_rephrase(config(tmp_path, server, count=1, n=1, api_key_env="TAGRPO_UNSET_KEY"))
    assert server.requests[0]["authorization"] == "Bearer EMPTY"
    with pytest.raises(ValueError, match="TAGRPO_UNSET_KEY"):
        run_rephrase(config(tmp_path, server, count=1, n=1, api_key_env="TAGRPO_UNSET_KEY", base_url=None))


def test_an_unreachable_server_fails_loudly_and_writes_nothing(tmp_path, capsys):
    import socket

    from tagrpo.cli import main

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    out = tmp_path / "o.jsonl"
    data = write_rows(tmp_path / "rows.jsonl", 3)
    args = ["--data", data, "--n", "2", "--base-url", url, "--model", "stub", "--out", str(out)]
    code = main(["rephrase", *args, "--max-retries", "1", "--backoff-base-s", "0.01"])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 2 and not out.exists()
    assert err == f"tagrpo rephrase: error: no request to {url} succeeded (connection x12); no output written"


def test_retry_after_is_capped_and_x_should_retry_is_honoured():
    from tagrpo.rephrase.client import RETRY_AFTER_CAP_S, retry_after, should_retry

    assert retry_after({"retry-after": "3600"}) == RETRY_AFTER_CAP_S == 120.0
    assert retry_after({"retry-after-ms": "250"}) == 0.25
    assert should_retry({"x-should-retry": "false"}) is False and should_retry({"x-should-retry": "True"}) is True
    assert should_retry({}) is None


def test_extra_body_fields_reach_every_request_beside_the_sent_ones(tmp_path, server):
    from tagrpo.cli import main

    server.answers = {"q0": "5"}
    out = tmp_path / "o.jsonl"
    extra = '{"generation_config": "{\\"do_sample\\": true}", "top_k": 5}'
    args = ["--data", write_rows(tmp_path / "rows.jsonl", 2), "--n", "2", "--base-url", server.url, "--model", "stub",
            "--out", str(out), "--solver", "judge", "--temperature", "0.3", "--extra-body", extra]
    assert main(["rephrase", *args]) == 0
    bodies = [r["body"] for r in server.requests]
    assert {r["kind"] for r in server.requests} == {"rephrase", "solve"} and len(bodies) == 8
    assert all(b["generation_config"] == '{"do_sample": true}' and b["top_k"] == 5 for b in bodies)
    assert {b["temperature"] for b in bodies if b["model"] == "stub"} == {0.3}  # the flags' fields stay
    assert {b["temperature"] for b in bodies if b["model"] == "judge"} == {0.0}
    assert json.loads((tmp_path / "o.jsonl.summary.json").read_text())["extra_body"] == json.loads(extra)


@pytest.mark.parametrize(
    ("extra", "backend", "message"),
    [
        ("{do_sample: true}", "openai", "--extra-body is not JSON"),
        ('["top_k", 5]', "openai", "--extra-body must be a JSON object"),
        ('{"seed": 1, "temperature": 0}', "openai", "--extra-body sets seed, temperature, which every request"),
        ('{"top_k": 5}', "transformers", "--extra-body applies to --backend openai only, not transformers"),
    ],
)
def test_a_bad_extra_body_is_one_line_naming_the_flag(tmp_path, capsys, extra, backend, message):
    from tagrpo.cli import main

    args = ["--data", write_rows(tmp_path / "rows.jsonl", 1), "--backend", backend, "--out", str(tmp_path / "o.jsonl")]
    assert main(["rephrase", *args, "--extra-body", extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"tagrpo rephrase: error: {message}")
    assert RephraseConfig(extra_body='{"top_k": 5}').extra_fields() == {"top_k": 5}
    assert RephraseConfig().extra_fields() == {}
