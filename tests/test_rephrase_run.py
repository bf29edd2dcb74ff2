"""``run_rephrase`` end to end: the trainer reads its output, resume, crash safety, solver, rule and local backends."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from conftest import KEY, needs_data, write_rows
from openai_stub_server import StubServer, question_of, rename

from tagrpo.cli import main as cli_main
from tagrpo.data import fit_rephrasings, load_questions
from tagrpo.data.jsonl import read_jsonl
from tagrpo.rephrase import RephraseConfig, run_rephrase
from tagrpo.rephrase.config import DO_SAMPLE_FLAG
from tagrpo.rephrase.run import RephraseFailed
from tagrpo.toy.world import parse, question_rows
from tagrpo.trainer.run import TrainJob, build_rows

ROOT = Path(__file__).resolve().parents[1]
TYPES = ("paraphrase", "rename", "format")


def main(argv: list[str]) -> int:
    return cli_main(["rephrase", *argv])


@needs_data
def test_math_train_output_trains_directly(tmp_path, server):
    out = tmp_path / "math.jsonl"
    summary = run_rephrase(
        RephraseConfig(data="math_train", limit=12, n=3, base_url=server.url, model="stub", out=str(out), concurrency=8)
    )
    # 3 of the 12 questions have no variable or name: a reordering is asked instead of their renaming.
    assert summary["accepted"] == 36 and summary["complete_questions"] == 12
    assert summary["rejected_by_reason"] == {} and summary["renaming_replaced"] == 3
    assert Counter(r["type"] for r in server.requests) == {"paraphrase": 12, "rename": 9, "format": 12, "reorder": 3}
    rows = load_questions(str(out))
    types = [[p["type"] for p in r["rephrasing_provenance"]] for r in rows]
    assert types.count(["paraphrase", "reorder", "format"]) == 3
    row = rows[0]
    assert {"level", "subject", "benchmark"} <= set(row) and row["prompt"] not in row["rephrasings"]
    assert [p["type"] for p in row["rephrasing_provenance"]] == ["paraphrase", "rename", "format"]
    assert row["rephrasing_provenance"][0]["checks_passed"] == [
        "nonempty", "changed", "asks", "numbers", "variables", "length"
    ]
    assert row["rephrasing_provenance"][1]["checks_passed"][-2:] == ["renamed", "length"]
    assert {p["model"] for p in row["rephrasing_provenance"]} == {"stub"}
    formatted, counts = build_rows(TrainJob(model="unused", data=str(out)), 3, "fill_original")
    assert len(formatted) == 12 and counts["complete"] == 12 and counts["filled"] == 0
    assert json.loads((tmp_path / "math.jsonl.summary.json").read_text())["accepted"] == 36


def test_rejections_are_counted_kept_and_short_rows_still_written(tmp_path, server, caplog):
    def responder(record):
        if record["type"] == "format" and record["id"] in ("q0", "q1"):
            return "Tom has 99 apples. How many?" if record["id"] == "q0" else "``` ```"
        question = question_of(record["body"])
        lead = {"format": "Solve: ", "rename": "Please answer. "}.get(record["type"], "Please tell. ")
        return "Rephrased question: " + lead + (rename(question) if record["type"] == "rename" else question)

    server.responder = responder
    out = tmp_path / "out.parquet"
    summary = run_rephrase(
        RephraseConfig(
            data=write_rows(tmp_path / "rows.jsonl", 4), n=3, base_url=server.url, model="stub", out=str(out)
        )
    )
    assert summary["rejected_by_reason"] == {"numbers": 1, "empty": 1}
    assert summary["by_type"]["format"] == {
        "accepted": 2,
        "rejected": {"numbers": 1, "empty": 1},
        "failed": {},
        "pending": 0,
    }
    assert summary["short_questions"] == 2
    assert "2 of 4 questions (50%) have fewer than 3 accepted rephrasings" in caplog.text  # more than 20%: said
    rows = load_questions(str(out))
    assert [len(r["rephrasings"]) for r in rows] == [2, 2, 3, 3]
    assert fit_rephrasings(rows, 3)[1]["filled"] == 2
    rejected = read_jsonl(str(out) + ".rejected.jsonl")
    assert {(r["id"], r["reason"]) for r in rejected} == {("q0", "numbers"), ("q1", "empty")}


def test_resume_skips_finished_work_and_a_template_edit_redoes_its_type(tmp_path, server):
    cfg = dict(
        data=write_rows(tmp_path / "rows.jsonl", 5),
        n=3,
        base_url=server.url,
        model="stub",
        out=str(tmp_path / "o.jsonl"),
    )
    run_rephrase(RephraseConfig(**cfg))
    assert run_rephrase(RephraseConfig(**cfg))["requests"] == 0
    (tmp_path / "t.yaml").write_text("rename: 'Rename the variables of: <question>{question}</question>'\n")
    summary = run_rephrase(RephraseConfig(**cfg, templates_file=str(tmp_path / "t.yaml")))
    assert summary["requests"] == 5 and summary["from_cache"] == 10
    assert Counter(t for _, t in server.keys()) == {"paraphrase": 5, "rename": 10, "format": 5}


def test_a_few_shot_templates_file_sends_its_stop_strings_and_cuts_the_reply_there(tmp_path, server):
    # a small model given examples goes on to a next example of its own: the server is asked to stop there, and a
    # server that ignores ``stop`` (this stub) has its reply cut at the same place before the checks
    lead = {"paraphrase": "Say: ", "rename": "", "format": "Listed: "}
    server.responder = lambda record: (lead[record["type"]] + rename(question_of(record["body"]))
                                       + "\n\nProblem: Bo has 7 cups and 8 more.")
    (tmp_path / "few.yaml").write_text(
        "paraphrase: 'Problem: A\n\nRewritten problem: B\n\n<question>{question}</question>'\n"
        "rename: 'Rename in: <question>{question}</question>'\n"
        "format: 'Format: <question>{question}</question>'\n"
        'stop: ["\\n\\nProblem:"]\n')
    out = tmp_path / "o.jsonl"
    summary = run_rephrase(RephraseConfig(data=write_rows(tmp_path / "rows.jsonl", 2), n=3, base_url=server.url,
                                          model="stub", out=str(out), templates_file=str(tmp_path / "few.yaml")))
    assert [r["body"]["stop"] for r in server.requests] == [["\n\nProblem:"]] * 6
    assert summary["accepted"] == 6 and summary["rejected_by_reason"] == {}
    rows = load_questions(str(out))
    assert rows[0]["rephrasings"][1] == rename("Tom has 2 apples and buys 3 more. How many apples?")
    cached = read_jsonl(str(out) + ".cache.jsonl")
    assert all(r["raw"].endswith("8 more.") and "Bo" not in r["text"] for r in cached)


def test_solver_check_rejects_wrong_answers(tmp_path, server):
    server.answers = {"q0": "5", "q1": "7", "q2": "1"}  # q2's gold is 9; q3 gets the default wrong answer
    summary = run_rephrase(
        RephraseConfig(
            data=write_rows(tmp_path / "rows.jsonl", 4),
            n=2,
            base_url=server.url,
            model="stub",
            out=str(tmp_path / "o.jsonl"),
            solver="judge",
        )
    )
    assert summary["accepted"] == 4 and summary["rejected_by_reason"] == {"solver": 4}
    solves = [r for r in server.requests if r["kind"] == "solve"]
    assert len(solves) == 8 and {r["body"]["model"] for r in solves} == {"judge"}
    rows = load_questions(str(tmp_path / "o.jsonl"))
    assert rows[0]["rephrasing_provenance"][0]["checks_passed"][-1] == "solver"
    assert (
        run_rephrase(
            RephraseConfig(
                data=str(tmp_path / "rows.jsonl"),
                n=2,
                base_url=server.url,
                model="stub",
                out=str(tmp_path / "o.jsonl"),
                solver="judge",
            )
        )["requests"]
        == 0
    )


def test_rule_backend_rephrases_the_toy_world_through_main(tmp_path, capsys):
    out = tmp_path / "toy.jsonl"
    args = ["--data", "toy_world", "--limit", "16", "--n", "4", "--backend", "rule", "--solver", "same"]
    assert main([*args, "--out", str(out)]) == 0
    rows = load_questions(str(out))
    assert len(rows) == 16
    for row in rows:
        assert len(row["rephrasings"]) == 4 and row["benchmark"] == "toy_world"
        assert all(parse(t) == parse(row["prompt"]) for t in row["rephrasings"])
        assert row["rephrasing_provenance"][1] == {
            "type": "rename",
            "model": "toy-world-rules",
            "backend": "rule",
            "template_hash": row["rephrasing_provenance"][1]["template_hash"],
            "checks_passed": ["nonempty", "changed", "parse", "solver"],
            "solver": "toy-world-rules",
            "attempt": 1,
        }
    capsys.readouterr()
    math_rows = tmp_path / "math_rows.jsonl"
    math_rows.write_text(json.dumps({"id": "m1", "prompt": "Compute $2+2$.", "answer": "4"}) + "\n")
    assert main(["--data", str(math_rows), "--backend", "rule", "--out", str(tmp_path / "m.jsonl")]) == 2
    assert "only rephrases the toy world" in capsys.readouterr().err


def test_rule_backend_reads_toy_rows_from_a_file_and_refuses_impossible_plans(tmp_path, capsys):
    source = tmp_path / "toy_rows.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in question_rows(6, seed=3, num_rephrasings=3)))
    summary = run_rephrase(RephraseConfig(data=str(source), n=3, backend="rule", out=str(tmp_path / "o.jsonl")))
    assert summary["accepted"] == 18 and summary["requests"] == 18
    for row, old in zip(load_questions(str(tmp_path / "o.jsonl")), load_questions(str(source)), strict=True):
        assert row["prompt"] == old["prompt"] and row["rephrasings"] != old["rephrasings"]
        assert len({parse(t) for t in [row["prompt"], *row["rephrasings"]]}) == 1
    symbolic = tmp_path / "symbolic.jsonl"
    symbolic.write_text(json.dumps({"id": "s0", "prompt": "3+5-2=", "answer": "6"}) + "\n")
    assert main(["--data", str(symbolic), "--backend", "rule", "--out", str(tmp_path / "s.jsonl")]) == 2
    assert "cannot rename entities of a 'symbolic' question" in capsys.readouterr().err


def test_transformers_backend_runs_batched_through_the_same_entry_point(tmp_path):
    from conftest import make_model_dir

    model = make_model_dir(tmp_path / "tiny")
    cfg = RephraseConfig(
        data=write_rows(tmp_path / "rows.jsonl", 3),
        n=2,
        backend="transformers",
        model=model,
        max_tokens=6,
        concurrency=4,
        out=str(tmp_path / "o.jsonl"),
    )
    with pytest.raises(RephraseFailed, match="not one rephrasing from transformers .* was accepted") as failed:
        run_rephrase(cfg)  # a random model's 6 tokens pass no check: nothing is written ...
    assert not (tmp_path / "o.jsonl").exists()
    records = read_jsonl(str(tmp_path / "o.jsonl.cache.jsonl"))  # ... but every reply is in the cache
    assert len(records) == 6 and {r["backend"] for r in records} == {"transformers"}
    reasons = sorted(Counter(r["reason"] for r in records).items())  # the message counts each rejection's reason
    assert f"({', '.join(f'{k} x{v}' for k, v in reasons)}); no output written" in str(failed.value)
    assert all(r["usage"][0] > 0 and 0 < r["usage"][1] <= 6 for r in records)


def _start(args: list[str], env: dict) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "tagrpo", "rephrase", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.slow
def test_kill_9_mid_run_then_resume_repeats_no_finished_request(tmp_path):
    out = tmp_path / "run" / "out.jsonl"
    cache = Path(str(out) + ".cache.jsonl")
    env = {**os.environ, "TAGRPO_TEST_KEY": KEY, "PYTHONPATH": str(ROOT)}
    with StubServer(latency_s=0.15) as server:
        args = [
            "--data",
            write_rows(tmp_path / "rows.jsonl", 16),
            "--n",
            "3",
            "--base-url",
            server.url,
            "--model",
            "stub",
            "--concurrency",
            "4",
            "--api-key-env",
            "TAGRPO_TEST_KEY",
            "--out",
            str(out),
        ]
        first = _start(args, env)
        server.wait_for(14, timeout_s=40)
        first.send_signal(signal.SIGKILL)
        logs = "".join(first.communicate(timeout=10))
        assert first.returncode == -signal.SIGKILL and not out.exists()
        finished = {(r["id"], r["type"]) for r in read_jsonl(str(cache))}
        assert 8 <= len(finished) < 48
        with open(cache, "a") as f:
            f.write('{"key": "[\\"q15\\",\\"format\\"')  # a torn last line, as a kill mid-write leaves
        second = _start(args, env)
        logs += "".join(second.communicate(timeout=60))
        assert second.returncode == 0, logs
        counts = Counter(server.keys())
    assert all(counts[k] == 1 for k in finished)
    # repeated: the 4 requests in flight at the kill, and replies received but not yet durable (one write batch)
    repeated = [k for k, c in counts.items() if c > 1]
    assert len(repeated) <= 2 * 4 and set(counts) == {(f"q{i}", t) for i in range(16) for t in TYPES}
    rows = load_questions(str(out))
    assert [len(r["rephrasings"]) for r in rows] == [3] * 16
    records = read_jsonl(str(cache))
    assert len(records) == len({r["key"] for r in records}) == 48  # the torn line is gone, nothing twice
    assert {r["authorization"] for r in server.requests} == {f"Bearer {KEY}"}
    assert KEY not in logs
    assert all(KEY.encode() not in p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())


def test_two_equal_rephrasings_of_one_question_keep_only_the_first(tmp_path, server):
    def responder(record):  # paraphrase and format reply the same words; rename renames
        question = question_of(record["body"])
        return rename(question) if record["type"] == "rename" else "Please answer: " + question

    server.responder = responder
    out = tmp_path / "out.jsonl"
    data = write_rows(tmp_path / "rows.jsonl", 2)
    summary = run_rephrase(RephraseConfig(data=data, n=3, base_url=server.url, model="stub", out=str(out)))
    assert summary["rejected_by_reason"] == {"duplicate": 2} and summary["accepted"] == 4
    rejected = read_jsonl(str(out) + ".rejected.jsonl")
    detail = "same text as the accepted paraphrase rephrasing"
    assert {(r["type"], r["detail"]) for r in rejected} == {("format", detail)}


def test_a_rejected_rephrasing_is_asked_again_with_another_seed_up_to_attempts(tmp_path, server):
    lead = {"paraphrase": "Say: ", "rename": "", "format": "Listed: "}

    def responder(record):  # q0's format is rejected on its first attempt only, q1's on every attempt
        attempt = record["body"]["seed"] // 1000
        if record["type"] == "format" and (record["id"] == "q1" or attempt == 0):
            return "Tom has 99 apples. How many?"  # a number the question does not have
        return lead[record["type"]] + rename(question_of(record["body"]))

    server.responder = responder
    out = tmp_path / "o.jsonl"
    cfg = dict(data=write_rows(tmp_path / "rows.jsonl", 2), n=3, base_url=server.url, model="stub", out=str(out))
    summary = run_rephrase(RephraseConfig(**cfg, attempts=3))
    seeds = {(q, t): [r["body"]["seed"] for r in server.requests if (r["id"], r["type"]) == (q, t)]
             for q in ("q0", "q1") for t in TYPES}
    assert seeds[("q0", "format")] == [0, 1000] and seeds[("q1", "format")] == [0, 1000, 2000]
    assert all(len(v) == 1 for k, v in seeds.items() if k[1] != "format") and summary["requests"] == 9
    assert summary["accepted"] == 5 and summary["rejected_by_reason"] == {"numbers": 1}
    assert summary["attempts"] == 3 and summary["accepted_on_a_later_attempt"] == 1
    rows = load_questions(str(out))
    assert [p["attempt"] for p in rows[0]["rephrasing_provenance"]] == [1, 1, 2]
    (rejected,) = read_jsonl(str(out) + ".rejected.jsonl")
    assert (rejected["id"], rejected["type"], rejected["attempts"]) == ("q1", "format", 3)
    again = run_rephrase(RephraseConfig(**cfg, attempts=3))  # resumed: every attempt is in the cache
    assert again["requests"] == 0 and again["from_cache"] == 9 and load_questions(str(out)) == rows
    once = run_rephrase(RephraseConfig(**cfg))  # one attempt: the first attempts' keys, as before attempts existed
    assert once["requests"] == 0 and once["from_cache"] == 6 and once["accepted"] == 4
    assert summary["same_reply_on_a_later_attempt"] == 2  # q1's format: the same wrong number three times
    with pytest.raises(Exception, match="attempts must be >= 1"):
        RephraseConfig(**cfg, attempts=0)


def test_a_server_that_answers_every_seed_alike_is_named_in_a_warning(tmp_path, server, caplog):
    server.responder = lambda record: "Tom has 99 apples. How many?" if record["type"] == "format" else \
        "Say: " + rename(question_of(record["body"]))  # ignores the seed, as a greedy server does
    summary = run_rephrase(RephraseConfig(data=write_rows(tmp_path / "rows.jsonl", 2), n=3, base_url=server.url,
                                          model="stub", out=str(tmp_path / "o.jsonl"), attempts=2))
    assert summary["requests"] == 8 and summary["same_reply_on_a_later_attempt"] == 2
    assert "2 requests asked again with another seed got the same reply word for word" in caplog.text
    assert '"do_sample": true, or with ' + DO_SAMPLE_FLAG in caplog.text


def test_only_known_prices_are_charged(tmp_path):
    local = dict(data="unused.jsonl", base_url="http://127.0.0.1:8000/v1", model="gpt-4-turbo")
    assert RephraseConfig(**local).prices is None  # the name of an OpenAI model on a local server is no price
    assert RephraseConfig(data="unused.jsonl", model="gpt-4-turbo").prices == (10.0, 30.0)
    assert RephraseConfig(**local, price_in=1.0, price_out=2.0).prices == (1.0, 2.0)
    with pytest.raises(ValueError, match="--max-cost needs a price"):
        RephraseConfig(**local, max_cost=5.0)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["rule", "transformers"])
def test_kill_9_keeps_what_every_backend_finished(backend, model_dirs, tmp_path):
    """The rule backend once wrote its cache only at the end, so a kill -9 lost everything."""

    out = tmp_path / "out.jsonl"
    cache = Path(str(out) + ".cache.jsonl")
    if backend == "rule":
        total, args = 60000, ["--data", "toy_world", "--limit", "20000", "--backend", "rule", "--n", "3"]
    else:
        total, args = 120, ["--data", write_rows(tmp_path / "rows.jsonl", 40), "--backend", "transformers",
                            "--model", model_dirs["qwen3"], "--max-tokens", "24", "--concurrency", "4", "--n", "3"]
    proc = _start([*args, "--out", str(out)], {**os.environ, "PYTHONPATH": str(ROOT)})
    deadline = time.monotonic() + 600  # seconds on an idle machine; far more loaded
    while not (cache.exists() and cache.stat().st_size > 0):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "nothing reached the cache in 600 s"
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=10)
    assert proc.returncode == -signal.SIGKILL and not out.exists()  # killed mid-run, before the output
    kept = read_jsonl(str(cache), repair=True)
    assert 0 < len(kept) < total and all(r["backend"] == backend for r in kept)  # committed as they finished


def test_rule_backend_commits_while_it_runs(tmp_path, monkeypatch):
    """What the kill -9 test above relies on, without its race: lines reach the cache file during the run."""
    import tagrpo.toy.rephraser as backends

    out = tmp_path / "out.jsonl"
    cache = Path(str(out) + ".cache.jsonl")
    calls, on_disk, real = [], [], backends.rule_rephrase

    def watching(*args):
        calls.append(1)
        if len(calls) == 1200 + 600:  # half way through the backend's calls (check_rule_rows made the first 1200)
            # The writer thread has had 599 finished results handed to it; give its fsync time, blocking the
            # event loop, so only a writer that already started (not one run at the end) can put lines on disk.
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and not (cache.exists() and cache.stat().st_size > 0):
                time.sleep(0.01)
            on_disk.append(cache.stat().st_size if cache.exists() else 0)
        return real(*args)

    monkeypatch.setattr(backends, "rule_rephrase", watching)
    run_rephrase(RephraseConfig(data="toy_world", limit=400, backend="rule", n=3, out=str(out)))
    assert len(calls) == 2400 and on_disk[0] > 0  # half way through, the first results are on disk
