"""The model-made regime's training set (issue 45, item 1): ``tagrpo rephrase`` against SmolLM2-135M-Instruct served
locally by ``transformers serve``, as a user would make it, committed before any of the regime's arms trains.

    OMP_NUM_THREADS=1 .venv/bin/python studies/real_study_v3_rephrase.py   # resumable: its cache is committed

On cores shared with other work, give the server one thread (``OMP_NUM_THREADS=1``): with torch's default threads
it answered 4 requests in 15 minutes on a loaded 2-core machine, with one about 5 a minute.

Writes every training question of the narrative group (q0: the narrative with digits) to
``outputs/real_study_v3_rephrase/questions.jsonl``, starts the server on 127.0.0.1, runs ``tagrpo rephrase`` (N = 3,
its default types, templates and checks; temperature 0.7, 128 tokens) into ``real_v3.REPHRASED`` (with its cache,
rejections and summary), stops the server and writes ``studies/results/real_study_v3_rephrased.md``: candidates asked
and accepted, questions left with N, with fewer, with none. Both commands are printed as a user would type them.
"""

import json
import os
import subprocess
import sys
from collections import Counter

from tagrpo.common.serving import wait_healthy
from tagrpo.data.jsonl import read_jsonl, write_jsonl
from tagrpo.experiments.declarations.real_v3 import REPHRASED, STUDY
from tagrpo.experiments.tasks import real_regimes
from tagrpo.models import fetch_model
from tagrpo.rephrase import RephraseConfig, run_rephrase
from tagrpo.rephrase.run import RephraseFailed

PORT = 8765
REPORT = REPHRASED.removesuffix(".jsonl") + ".md"


def serve(model: str, log: str) -> subprocess.Popen:
    cmd = [os.path.join(os.path.dirname(sys.executable), "transformers"), "serve", "--host", "127.0.0.1",
           "--port", str(PORT), "--dtype", "float32", model]
    print(" ".join(cmd[1:]) + " &", flush=True)
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    if (why := wait_healthy(f"http://127.0.0.1:{PORT}", proc, 300)) is None:
        return proc
    proc.kill()
    raise SystemExit(f"transformers serve {why}; its log: {log}")


def failed_report(cache: str, asked: int, n: int, command: str, why: str) -> str:
    """The report when the checks accepted nothing (``tagrpo rephrase`` then writes no data set): the counts from
    its cache, one line per candidate with its verdict and token usage."""
    replies = read_jsonl(cache)
    reasons = Counter(r["reason"] for r in replies if not r["accepted"])
    accepted = Counter(r["id"] for r in replies if r["accepted"])
    full = sum(v >= n for v in accepted.values())
    prompt, completion = (sum(r["usage"][i] for r in replies if r.get("usage")) for i in (0, 1))
    return "\n".join([
        "# The model-made regime's rephrasings (real study v3)", "",
        f"`{command}` against SmolLM2-135M-Instruct served by `transformers serve` on this CPU ({len(replies)} "
        f"replies cached, {prompt} prompt and {completion} completion tokens).", "",
        "| questions | candidates asked | accepted | with N = 3 | with fewer | with none |",
        "|---|---|---|---|---|---|",
        f"| {asked} | {asked * n} | {sum(accepted.values())} | {full} | {len(accepted) - full} | "
        f"{asked - len(accepted)} |", "",
        f"Rejected by the checks: {', '.join(f'{k} {v}' for k, v in sorted(reasons.items()))} (`question`: the reply "
        "asks nothing, it answers the question; `numbers`: it adds or drops numbers). `tagrpo rephrase` stopped: "
        f"\"{why}\". With no rephrasing for any question the regime has no training set of its own (TA-GRPO would pad "
        "every pool with q0, `short_rephrasings=\"fill_original\"`: 8 samples of q0 per question, much as "
        "equal-sampling GRPO trains), so it "
        "ends before any arm (`tagrpo/experiments/declarations/real_v3.py`).", "",
        f"Files: `{cache.removeprefix(os.getcwd() + os.sep)}` (every reply, its verdict and reason).", ""])


def report(summary: dict, asked: int, command: str) -> str:
    rows = {r["id"]: len(r.get("rephrasings") or []) for r in read_jsonl(REPHRASED)}
    n = summary["n"]
    full, none = sum(v >= n for v in rows.values()), sum(v == 0 for v in rows.values())
    reasons = ", ".join(f"{k} {v}" for k, v in sorted(summary["rejected_by_reason"].items())) or "none"
    return "\n".join([
        "# The model-made regime's rephrasings (real study v3)", "",
        f"`{command}` against SmolLM2-135M-Instruct served by `transformers serve` on this CPU "
        f"({summary['elapsed_s'] / 60:.1f} min, {summary['requests']} requests, {summary['prompt_tokens']} prompt and "
        f"{summary['completion_tokens']} completion tokens).", "",
        "| questions | candidates asked | accepted | with N = 3 | with fewer | with none |",
        "|---|---|---|---|---|---|",
        f"| {asked} | {asked * n} | {summary['accepted']} | {full} | {len(rows) - full - none} | {none} |", "",
        f"Rejected by the checks: {reasons}. A question with fewer than N trains as the trainer's default does "
        "(`short_rephrasings=\"fill_original\"`: the missing slots repeat q0; `tagrpo/data/short.py`).", "",
        f"Files: `{REPHRASED}` (the data set the regime trains on), its `.cache.jsonl` (every reply), "
        "`.rejected.jsonl` (each rejection with its reason) and `.summary.json`.", ""])


if __name__ == "__main__":
    group = STUDY.task_options["groups"][STUDY.task_options["regimes"]["model_made"]["group"]]
    work = os.path.join("outputs", "real_study_v3_rephrase")
    questions = [{"id": r["id"], "prompt": r["forms"][group["q0"]], "answer": r["answer"]}
                 for r in real_regimes.problem_rows("train")]
    data = write_jsonl(os.path.join(work, "questions.jsonl"), questions)
    model = fetch_model("smollm2-135m")
    cfg = RephraseConfig(data=data, n=3, base_url=f"http://127.0.0.1:{PORT}/v1", model=model, out=REPHRASED,
                         max_tokens=128, concurrency=4, timeout_s=600)
    command = (f"tagrpo rephrase --data {data} --n 3 --base-url {cfg.base_url} --model {model} --out {REPHRASED} "
               "--max-tokens 128 --concurrency 4 --timeout-s 600")
    server = serve(model, os.path.join(work, "serve.log"))
    try:
        print(command, flush=True)
        summary = run_rephrase(cfg)
    except RephraseFailed as failed:
        with open(REPORT, "w", encoding="utf-8") as f:
            f.write(failed_report(REPHRASED + ".cache.jsonl", len(questions), cfg.n, command, str(failed)))
        raise SystemExit(f"{failed}; the counts: {REPORT}") from None
    finally:
        server.terminate()
        server.wait(timeout=30)
    with open(REPORT, "w", encoding="utf-8") as f:
        f.write(report(summary, len(questions), command))
    print(json.dumps({k: summary[k] for k in ("accepted", "complete_questions", "short_questions")}))
