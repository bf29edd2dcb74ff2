"""The registries the toy world (or any other plug-in) fills: rephrase backends with their hooks, rephrase question
sources and benchmarks; and the toy world's own entries, present after a bare ``import tagrpo``."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest

from tagrpo.cli import main
from tagrpo.data import load_questions
from tagrpo.data.benchmarks import BUILTINS, benchmark_names, load_benchmark, register_benchmark
from tagrpo.evaluation.run import EvalConfig
from tagrpo.rephrase import RephraseConfig, register_backend, register_source, run_rephrase
from tagrpo.rephrase.backends import BACKENDS, Completion
from tagrpo.rephrase.checks import CheckResult
from tagrpo.rephrase.config import SOURCES, load_source_rows
from tagrpo.toy.world import question_rows


class Shouting:
    """Rephrases by upper-casing and naming the type; as a solver, always answers 2."""

    kind = "shout"

    def __init__(self, model: str, solver: bool) -> None:
        self.model, self.solver = model, solver

    async def run(self, requests, emit, budget) -> None:
        for request in requests:
            if not budget.acquire():
                return
            reply = "\\boxed{2}" if request.kind == "solve" else f"{request.text.upper()} [{request.transform}]"
            emit(request, Completion(reply), None)
            await asyncio.sleep(0)

    async def aclose(self) -> None:
        return None


def shouted(original: str, reply: str) -> CheckResult:
    return CheckResult(["shouted"]) if reply.startswith(original.upper()) else CheckResult([], "identical", "quiet")


def refuse_bad(rows: list[dict], plan: list[tuple[str, int]]) -> None:
    if any(r["id"] == "bad" for r in rows):
        raise ValueError(f"row 'bad' cannot be shouted; plan {plan}")


@pytest.fixture
def shout():
    made = []
    register_backend("shout", lambda cfg, model, solver: made.append(solver) or Shouting(model, solver),
                     check=shouted, preflight=refuse_bad, self_solving=True)
    yield made
    del BACKENDS["shout"]


def _rows(path, ids):
    path.write_text("".join(json.dumps({"id": i, "prompt": f"what is 1+1? ({i})", "answer": "2"}) + "\n" for i in ids))
    return str(path)


def test_a_registered_backend_brings_its_check_preflight_and_solver(shout, tmp_path):
    out = tmp_path / "o.jsonl"
    cfg = RephraseConfig(data=_rows(tmp_path / "q.jsonl", ["a", "b"]), n=2, backend="shout", model="loud",
                         solver="judge", out=str(out))
    summary = run_rephrase(cfg)
    # 2 questions x 2 rephrasings, then 4 solver requests to the backend itself (not to 'judge')
    assert (summary["accepted"], summary["requests"], summary["solver"]) == (4, 8, "loud")
    assert shout == [False, True]
    rows = load_questions(str(out))
    assert rows[0]["rephrasings"] == ["WHAT IS 1+1? (A) [paraphrase]", "WHAT IS 1+1? (A) [rename]"]
    # nothing to rename, yet the plan keeps its renaming: the backend's own check decides
    assert [p["type"] for p in rows[1]["rephrasing_provenance"]] == ["paraphrase", "rename"]
    assert rows[1]["rephrasing_provenance"][0]["checks_passed"] == ["shouted", "solver"]
    with pytest.raises(ValueError, match=r"row 'bad' cannot be shouted; plan \[\('paraphrase', 0\)\]"):
        run_rephrase(RephraseConfig(data=_rows(tmp_path / "b.jsonl", ["bad"]), n=1, backend="shout",
                                    out=str(tmp_path / "b_out.jsonl")))


def test_the_command_line_offers_the_backends_registered_before_it(shout, tmp_path, capsys):
    out = tmp_path / "o.jsonl"
    assert main(["rephrase", "--data", _rows(tmp_path / "q.jsonl", ["a"]), "--backend", "shout", "--n", "1",
                 "--out", str(out)]) == 0
    assert load_questions(str(out))[0]["rephrasings"] == ["WHAT IS 1+1? (A) [paraphrase]"]
    with pytest.raises(SystemExit):
        main(["rephrase", "--help"])
    assert "{openai,transformers,rule,shout}" in capsys.readouterr().out


def test_a_registered_source_gets_the_limit_and_the_seed():
    register_source("pairs", lambda limit, seed: [{"id": f"{seed}-{i}", "prompt": "q", "answer": "1"}
                                                  for i in range(limit)])
    try:
        rows = load_source_rows(RephraseConfig(data="pairs", limit=2, seed=5))
    finally:
        del SOURCES["pairs"]
    assert [r["id"] for r in rows] == ["5-0", "5-1"]


def test_a_registered_benchmark_loads_and_is_valid_for_eval():
    register_benchmark("tiny", lambda limit=None: [{"id": "t0", "question": "1+1?", "answer": "2"}][:limit])
    try:
        assert load_benchmark("tiny", limit=1) == [{"id": "t0", "question": "1+1?", "answer": "2"}]
        assert benchmark_names()[-2:] == ("toy_world", "tiny")
        assert EvalConfig(model="m", benchmarks="tiny").benchmark_list == ["tiny"]
    finally:
        del BUILTINS["tiny"]
    with pytest.raises(ValueError, match="benchmark='tiny' is not valid; expected one of: .*'toy_world'"):
        load_benchmark("tiny")


def test_the_toy_world_rephrase_source_is_the_training_draw():
    rows = load_source_rows(RephraseConfig(data="toy_world", backend="rule", limit=3, seed=7))
    expected = question_rows(3, 7, 0)
    assert [r["prompt"] for r in rows] == [r["prompt"] for r in expected] and rows[0]["id"] == "w7-0"
    assert set(rows[0]) == {"id", "prompt", "answer", "benchmark", "reward"}
    assert (rows[0]["benchmark"], rows[0]["reward"]) == ("toy_world", "math")
    assert len(load_source_rows(RephraseConfig(data="toy_world", backend="rule"))) == 64


def test_a_library_user_gets_the_toy_world_from_import_tagrpo_alone():
    code = (
        "import sys\n"
        "from tagrpo.data.benchmarks import load_benchmark\n"
        "from tagrpo.rephrase.backends import BACKENDS\n"
        "rows = load_benchmark('toy_world', limit=3)\n"
        "print([r['id'] for r in rows], rows[0]['benchmark'], list(BACKENDS))\n"
        "print(sorted(m for m in ('torch', 'transformers', 'trl') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["['w2000-0', 'w2000-1', 'w2000-2'] toy_world ['openai', 'transformers', 'rule']",
                                "[]"]
