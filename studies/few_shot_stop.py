"""Does the few-shot templates' blank-line stop cost a small rephraser its candidates, and does asking again
(``tagrpo rephrase --attempts``) win them back? A measurement for ``configs/rephrase/few_shot.yaml``.

    .venv/bin/python studies/few_shot_stop.py                  # resumable: the caches are committed
    .venv/bin/python studies/few_shot_stop.py --render-only    # the table from the committed caches, no server

The model-made regime's run of ``tagrpo rephrase`` (SmolLM2-135M-Instruct, the few-shot templates;
``studies/results/real_study_v3_rephrased_few_shot.md``) rejected 208 of its 591 candidates as empty, and each of
those replies was the template's own label, ``Rewritten problem:``. The guess to test: the model writes the label,
a blank line and then its rewrite, and the ``"\\n\\n"`` stop cuts the reply at the blank line. Two variants, on the
first ``QUESTIONS`` of the regime's training questions (its q0, the narrative with digits), N = 3, everything else as
the regime's run (the default types and checks, temperature 0.7, 128 tokens, ``transformers serve`` on this CPU):

- ``blank_line_stop``: the templates the regime ran (``real_v3.TEMPLATES``), stop ``["\\nProblem:",
  "\\nRewritten problem:", "\\n\\n"]``. Its requests are the regime's own (the same cache keys), so its replies are
  taken from the regime's committed cache: the same samples, not drawn again;
- ``no_blank_line_stop``: the same templates without the ``"\\n\\n"`` stop (``no_blank_line_stop.yaml``, written
  here). A reply that goes on after its rewrite is still cut where it starts a next example (``\\nProblem:``);
- ``three_attempts``: the regime's templates with ``--attempts 3``: a rejected rephrasing is asked again with another
  seed, up to three requests in all (its first attempts are the regime's replies, reused as above).
- ``three_attempts_sampled``: the same with ``--extra-body '{"generation_config": "{\\"do_sample\\": true}"}'``,
  which makes the server sample (added 2026-12-07, after the result below; its first attempts are again the regime's
  greedy replies, so only its later attempts are sampled).

Writes ``studies/results/few_shot_stop/``: each variant's output, cache, rejections and summary, and
``few_shot_stop.{json,md}``: per variant candidates asked and accepted, rejections by reason, questions with N,
fewer and none, completion tokens, and the time the new replies took (the first variant's are the regime's,
reused: compare tokens, not times). One reply per request (sent at temperature 0.7, decoded greedily: see below);
the table gives each share with its 95% Wilson interval, and the replies are paired request by request (the same
request to the same server).

Result (2026-12-07, ``studies/results/few_shot_stop/few_shot_stop.md``): the guess is refuted. The 64 empty replies
are the label and the model's end of turn under both variants; without the stop, 9 accepted rewrites became
rejections (a reply that went on past its blank line) and none was gained, at 42% more completion tokens. The
shipped templates keep the stop. Asking again gained nothing either: every one of the 135 rejected rephrasings got
the same reply word for word on its second and third attempt, because the server did not sample. ``transformers
serve`` (5.25) samples only when the model's ``generation_config.json`` sets ``do_sample``, and SmolLM2-135M-Instruct's
does not: it decoded greedily, whatever temperature and seed were sent. So did the model-made regime's run, declared
at temperature 0.7. ``tagrpo rephrase`` now says so in a warning when a request asked again gets the same reply.

Sampled (2026-12-07, on an AVX2-only AMD EPYC; the server in fp32 as before): with ``--extra-body`` making the
server sample at 0.7, asking again won 11 rephrasings (63 to 74 of 198 accepted; every later attempt got a reply of
its own), left 4 questions with none instead of 10, and left 6 slots empty instead of 64: of the other 58, 11 were
accepted, 39 rejected because the rewrite no longer asks anything and 8 for their numbers. It cost 20,827 completion
tokens against 13,588 greedy and 5,650 for one attempt. One draw; the first attempts are the same replies in both,
so every later acceptance is a gain.
"""

import argparse
import json
import os
from collections import Counter

import yaml

from tagrpo.common.machine import machine
from tagrpo.common.serving import free_port, start_transformers_serve, stop_server
from tagrpo.data import sum_problems
from tagrpo.data.jsonl import read_jsonl, write_jsonl
from tagrpo.evaluation.tables import markdown_table
from tagrpo.experiments.declarations.real_v3 import REPHRASED, STUDY, TEMPLATES
from tagrpo.models import fetch_model
from tagrpo.rephrase import RephraseConfig, run_rephrase
from tagrpo.rephrase.config import DO_SAMPLE_BODY

OUT = "studies/results/few_shot_stop"
QUESTIONS = 66  # a third of the regime's 197 training questions
N = 3
VARIANTS = ("blank_line_stop", "no_blank_line_stop", "three_attempts", "three_attempts_sampled")
# requests per planned rephrasing (tagrpo rephrase --attempts); 1 elsewhere
ATTEMPTS = {"three_attempts": 3, "three_attempts_sampled": 3}
# tagrpo rephrase --extra-body: the sampled variant makes the server sample (see the docstring)
EXTRA_BODY = {"three_attempts_sampled": DO_SAMPLE_BODY}
ASKED_AGAIN = {"three_attempts": "the server decoded greedily", "three_attempts_sampled": "the server sampled"}
LABEL = "Rewritten problem:"  # the few-shot templates' last line


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95% Wilson score interval of a share ``k / n``."""
    if n == 0:
        return (float("nan"), float("nan"))
    p, zz = k / n, z * z
    mid, half = (p + zz / (2 * n)) / (1 + zz / n), z * ((p * (1 - p) + zz / (4 * n)) / n) ** 0.5 / (1 + zz / n)
    return (mid - half, mid + half)


def templates_of(variant: str) -> str:
    """The templates file of ``variant`` (the second written here from the first)."""
    if variant != "no_blank_line_stop":
        return TEMPLATES
    with open(TEMPLATES, encoding="utf-8") as f:
        data = yaml.safe_load(f)
    data["stop"] = [s for s in data["stop"] if s != "\n\n"]
    path = os.path.join(OUT, f"{variant}.yaml")
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"# {TEMPLATES} without its blank-line stop (studies/few_shot_stop.py)\n")
        yaml.safe_dump(data, f, sort_keys=False, allow_unicode=True, width=1000)
    return path


def counts(out: str, ids: set[str]) -> dict:
    """On ``ids`` only: planned rephrasings (``asked``: N per question) and what ``tagrpo rephrase`` wrote of them
    (accepted; the final rejections by reason, a repeat of an accepted one among them; questions with N, fewer and
    none), and from the cache every reply (``replies``: with more attempts, more than planned) and their tokens."""
    rows = [r for r in read_jsonl(out) if r["id"] in ids]
    got = [len(r["rephrasings"]) for r in rows] + [0] * (len(ids) - len(rows))
    replies = [r for r in read_jsonl(out + ".cache.jsonl") if r["id"] in ids]
    with open(out + ".summary.json", encoding="utf-8") as f:
        summary = json.load(f)
    return {"asked": len(ids) * N, "replies": len(replies), "accepted": sum(got), "full": got.count(N),
            "fewer": sum(0 < g < N for g in got), "none": got.count(0),
            "reasons": dict(Counter(r["reason"] for r in read_jsonl(out + ".rejected.jsonl") if r["id"] in ids)),
            "completion_tokens": sum(r["usage"][1] for r in replies if r.get("usage")),
            "new_results": summary["new_results"], "request_phase_s": summary["request_phase_s"],
            "accepted_later": summary.get("accepted_on_a_later_attempt", 0),
            "same_reply": summary.get("same_reply_on_a_later_attempt", 0)}


def paired(first: str, second: str, ids: set[str]) -> dict:
    """The two variants' replies to the same request (id, type, variant): how many agree up to their first blank
    line (where the first variant's stop cut), are accepted by one variant only, or are empty under both."""
    def replies(out: str) -> dict:
        return {(r["id"], r["type"], r["variant"]): r for r in read_jsonl(out + ".cache.jsonl") if r["id"] in ids}

    a, b = replies(first), replies(second)
    both = sorted(set(a) & set(b))
    return {"requests": len(both),
            "same_first_paragraph": sum(a[k]["raw"].split("\n\n")[0] == b[k]["raw"].split("\n\n")[0] for k in both),
            "accepted_first_only": sum(a[k]["accepted"] and not b[k]["accepted"] for k in both),
            "accepted_second_only": sum(b[k]["accepted"] and not a[k]["accepted"] for k in both),
            "empty_both": sum(a[k]["reason"] == b[k]["reason"] == "empty" for k in both),
            "label_only_both": sum(a[k]["raw"].strip() == b[k]["raw"].strip() == LABEL for k in both)}


def markdown(data: dict) -> str:
    rows, p = [], data["paired"]
    for name, c in data["variants"].items():
        lo, hi = wilson(c["accepted"], c["asked"])
        empty = c["reasons"].get("empty", 0)
        rows.append([f"`{name}`", c["asked"], f"{c['accepted']} ({100 * c['accepted'] / c['asked']:.0f}%, "
                     f"[{100 * lo:.0f}, {100 * hi:.0f}])", f"{empty} ({100 * empty / c['asked']:.0f}%)",
                     ", ".join(f"{k} {v}" for k, v in sorted(c["reasons"].items()) if k != "empty") or "-",
                     f"{c['full']} / {c['fewer']} / {c['none']}", c["completion_tokens"],
                     f"{c['request_phase_s']:.0f}, {c['new_results']}" if c["new_results"] else
                     "reused (the regime's replies)"])
    again = [f"Asked again (`{v}`, {why}): {data['variants'][v]['accepted_later']} rephrasings accepted on a later "
             f"attempt; {data['variants'][v]['same_reply']} later attempts got the same reply word for word as the one "
             "before." for v, why in ASKED_AGAIN.items() if v in data["variants"]]
    return "\n".join([
        "# The few-shot templates on SmolLM2-135M-Instruct: the blank-line stop, and asking again", "",
        f"`{data['command']}`: the first {data['questions']} training questions of the model-made regime, N = {N}, "
        f"SmolLM2-135M-Instruct served by `transformers serve` on this CPU ({data['machine']}). Design and caveats: "
        "the script's docstring. One draw per variant.", "",
        markdown_table(["variant", "candidates", "accepted (95% CI)", "empty", "other rejections",
                        "questions with N / fewer / none", "completion tokens", "new replies: s, how many"],
                       rows), "",
        f"Paired, request by request ({p['requests']}): the replies agree up to their first blank line in "
        f"{p['same_first_paragraph']} (the server decodes greedily: the same request gets the same reply), so the "
        f"variants differ only in what follows it. Accepted with the blank-line stop only: {p['accepted_first_only']}; "
        f"without it only: {p['accepted_second_only']}. Empty under both: {p['empty_both']}, of which "
        f"{p['label_only_both']} are the template's label `{LABEL}` and nothing more under both, the same reply "
        "with or without the stop: the model ended its turn there.", ""] + [line for a in again for line in (a, "")])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--render-only", action="store_true", help="the table from the caches on disk, no server")
    render_only = parser.parse_args().render_only
    os.makedirs(OUT, exist_ok=True)
    group = STUDY.task_options["groups"][STUDY.task_options["regimes"]["model_made"]["group"]]
    rows = sum_problems.problem_rows("train")[:QUESTIONS]
    questions = [{"id": r["id"], "prompt": r["forms"][group["q0"]], "answer": r["answer"]} for r in rows]
    data = write_jsonl(os.path.join("outputs", "few_shot_stop", "questions.jsonl"), questions)
    ids = {q["id"] for q in questions}
    for variant in ("blank_line_stop", "three_attempts", "three_attempts_sampled"):  # first attempts: the regime's
        cache = os.path.join(OUT, f"{variant}.jsonl.cache.jsonl")
        if not os.path.exists(cache):
            write_jsonl(cache, [r for r in read_jsonl(REPHRASED + ".cache.jsonl") if r["id"] in ids])
    os.environ.setdefault("OMP_NUM_THREADS", "1")  # the server's torch: one thread beside other work
    model, port, server = None if render_only else fetch_model("smollm2-135m"), free_port(), None
    if model:
        server = start_transformers_serve(model, port, os.path.join("outputs", "few_shot_stop", "serve.log"))
    try:
        for variant in VARIANTS if server else ():
            cfg = RephraseConfig(data=data, n=N, base_url=f"http://127.0.0.1:{port}/v1", model=model,
                                 out=os.path.join(OUT, f"{variant}.jsonl"), templates_file=templates_of(variant),
                                 max_tokens=128, concurrency=4, timeout_s=600, attempts=ATTEMPTS.get(variant, 1),
                                 extra_body=EXTRA_BODY.get(variant))
            run_rephrase(cfg)
    finally:
        if server:
            stop_server(server)
    path = os.path.join(OUT, "few_shot_stop.json")
    before = {}
    if os.path.exists(path):  # a rerun reuses every reply: keep the time of the run that drew them
        with open(path, encoding="utf-8") as f:
            before = json.load(f)["variants"]
    variants = {v: counts(os.path.join(OUT, f"{v}.jsonl"), ids) for v in VARIANTS  # those run so far
                if os.path.exists(os.path.join(OUT, f"{v}.jsonl.summary.json"))}
    for v, c in variants.items():
        if not c["new_results"] and before.get(v, {}).get("new_results"):
            c["new_results"], c["request_phase_s"] = before[v]["new_results"], before[v]["request_phase_s"]
    m = machine(("torch", "transformers"))
    result = {"command": "python studies/few_shot_stop.py", "questions": len(questions), "n": N,
              "machine": f"{m['cpu']}, {m['cpus']} cores, load {m['load_average_1m']}",
              "variants": variants, "paired": paired(*(os.path.join(OUT, f"{v}.jsonl") for v in VARIANTS[:2]), ids)}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
    with open(os.path.join(OUT, "few_shot_stop.md"), "w", encoding="utf-8") as f:
        f.write(markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
