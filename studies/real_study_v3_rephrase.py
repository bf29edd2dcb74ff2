"""The model-made regime's training set (issue 45, item 1), second design: ``tagrpo rephrase`` with few-shot
templates (``real_v3.TEMPLATES``) against SmolLM2-135M-Instruct served locally by ``transformers serve``, as a user
would make it. A pilot on validation questions first; the declaration's rule (``real_v3``'s docstring) decides
whether the training questions are rephrased and the regime trains.

    OMP_NUM_THREADS=1 .venv/bin/python studies/real_study_v3_rephrase.py --pilot   # the first 24 validation questions
    OMP_NUM_THREADS=1 .venv/bin/python studies/real_study_v3_rephrase.py           # the 197 training questions

Both are resumable (the caches are committed). On cores shared with other work, give the server one thread
(``OMP_NUM_THREADS=1``): with torch's default threads it answered 4 requests in 15 minutes on a loaded 2-core machine.

Writes the questions (q0: the narrative with digits) to ``outputs/real_study_v3_rephrase/``, starts the server on
127.0.0.1, runs ``tagrpo rephrase`` (N = 3, its default types and checks, the few-shot templates; temperature 0.7,
128 tokens) into ``real_v3.REPHRASED`` (the pilot: ``PILOT_OUT``) with its cache, rejections and summary, stops the
server and writes the report next to it (``.md``): candidates asked and accepted, questions left with N, with fewer,
with none, and, for the pilot, whether the regime goes on and every accepted rephrasing beside its question. The
first design (default templates, 0 of 591 accepted) is reported in ``studies/results/real_study_v3_rephrased.md``;
its script is this one at commit 937b32c.
"""

import argparse
import os
import subprocess
from collections import Counter

from tagrpo.common.serving import start_transformers_serve, stop_server
from tagrpo.data import sum_problems
from tagrpo.data.jsonl import read_jsonl, write_jsonl
from tagrpo.experiments.declarations.real_v3 import PILOT, REPHRASED, STUDY, TEMPLATES
from tagrpo.models import fetch_model
from tagrpo.rephrase import RephraseConfig, run_rephrase
from tagrpo.rephrase.run import RephraseFailed

PORT = 8765
PILOT_OUT = "studies/results/real_study_v3_rephrase_pilot.jsonl"
N = 3


def serve(model: str, log: str) -> subprocess.Popen:
    print(f"transformers serve --host 127.0.0.1 --port {PORT} --dtype float32 {model} &", flush=True)
    try:
        return start_transformers_serve(model, PORT, log)
    except RuntimeError as failed:
        raise SystemExit(str(failed)) from None


def counts(out: str, asked: int, n: int) -> dict:
    """What the run made, from its cache (every reply, once per planned slot): accepted and rejected by reason, and
    the questions with N, fewer or no accepted rephrasing (a duplicate of an accepted one counts once)."""
    replies = read_jsonl(out + ".cache.jsonl")
    kept: dict[str, set[str]] = {}
    for r in replies:
        if r["accepted"]:
            kept.setdefault(r["id"], set()).add(r["text"])
    full = sum(len(v) >= n for v in kept.values())
    return {"replies": len(replies), "asked": asked * n, "accepted": sum(map(len, kept.values())),
            "full": full, "fewer": len(kept) - full, "none": asked - len(kept),
            "reasons": Counter(r["reason"] for r in replies if not r["accepted"]),
            "tokens": tuple(sum(r["usage"][i] for r in replies if r.get("usage")) for i in (0, 1))}


def goes_on(c: dict, pilot: bool, questions: int) -> bool:
    """The declared rule: the pilot goes on with a third of its candidates accepted; the regime trains when half of
    its training questions have one rephrasing or more."""
    return 3 * c["accepted"] >= c["asked"] if pilot else 2 * (questions - c["none"]) >= questions


def report(out: str, questions: list[dict], command: str, pilot: bool, why: str | None = None) -> str:
    c = counts(out, len(questions), N)
    go = goes_on(c, pilot, len(questions))
    what = f"pilot on the first {len(questions)} validation questions" if pilot else "the training questions"
    lines = [
        f"# The model-made regime's rephrasings, second design: few-shot templates ({what})", "",
        f"`{command}` against SmolLM2-135M-Instruct served by `transformers serve` on this CPU ({c['replies']} replies "
        f"cached, {c['tokens'][0]} prompt and {c['tokens'][1]} completion tokens). Templates: `{TEMPLATES}`.", "",
        "| questions | candidates asked | accepted | with N = 3 | with fewer | with none |",
        "|---|---|---|---|---|---|",
        f"| {len(questions)} | {c['asked']} | {c['accepted']} | {c['full']} | {c['fewer']} | {c['none']} |", "",
        "Rejected by the checks: " + (", ".join(f"{k} {v}" for k, v in sorted(c["reasons"].items())) or "none")
        + " (`question`: the reply asks nothing, it answers the question; `numbers`: it adds or drops numbers).", ""]
    if why is not None:
        lines += [f"`tagrpo rephrase` stopped: \"{why}\".", ""]
    rule = ("a third of the pilot's candidates accepted" if pilot
            else "half of the training questions with one rephrasing or more")
    verdict = "goes on" if go else "ends here, reported without arms"
    lines += [f"**The declared rule ({rule}): the regime {verdict}.** A question with fewer than N trains as the "
              "trainer's default does (`short_rephrasings=\"fill_original\"`: the missing slots repeat q0).", ""]
    if pilot:
        prompts = {q["id"]: q["prompt"] for q in questions}
        accepted = [r for r in read_jsonl(out + ".cache.jsonl") if r["accepted"]]
        lines += ["| question | type | accepted rephrasing |", "|---|---|---|"]
        lines += [f"| {prompts[r['id']]} | {r['type']} | {r['text'].replace('|', '/')} |" for r in accepted]
        lines.append("")
    lines += [f"Files: `{out}` and its `.cache.jsonl` (every reply, its verdict and reason).", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pilot", action="store_true", help=f"the first {PILOT} validation questions")
    pilot = parser.parse_args().pilot
    group = STUDY.task_options["groups"][STUDY.task_options["regimes"]["model_made"]["group"]]
    split, out = ("validation", PILOT_OUT) if pilot else ("train", REPHRASED)
    work = os.path.join("outputs", "real_study_v3_rephrase")
    questions = [{"id": r["id"], "prompt": r["forms"][group["q0"]], "answer": r["answer"]}
                 for r in sum_problems.problem_rows(split, PILOT if pilot else None)]
    data = write_jsonl(os.path.join(work, f"{split}_questions.jsonl"), questions)
    model = fetch_model("smollm2-135m")
    cfg = RephraseConfig(data=data, n=N, base_url=f"http://127.0.0.1:{PORT}/v1", model=model, out=out,
                         templates_file=TEMPLATES, max_tokens=128, concurrency=4, timeout_s=600)
    command = (f"tagrpo rephrase --data {data} --n {N} --templates-file {TEMPLATES} --base-url {cfg.base_url} "
               f"--model {model} --out {out} --max-tokens 128 --concurrency 4 --timeout-s 600")
    server = serve(model, os.path.join(work, "serve.log"))
    why = None
    try:
        print(command, flush=True)
        run_rephrase(cfg)
    except RephraseFailed as failed:
        why = str(failed)
    finally:
        stop_server(server)
    path = out.removesuffix(".jsonl") + ".md"
    with open(path, "w", encoding="utf-8") as f:
        f.write(report(out, questions, command, pilot, why))
    print(f"report: {path}")


if __name__ == "__main__":
    main()
