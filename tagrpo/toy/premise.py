"""The regime world's premise on its base model (``studies/toy_premise.py``) and ``tagrpo probe`` checked against it
(``studies/probe_premise.py``): measurements of the base, no arms. Each is measured once (sampling cached under a
work directory, resumable) into a JSON that keeps its raw counts, and rendered from them: ``--render-only``
rewrites the committed JSON and markdown from the JSON's raw part with identical numbers
(``tests/test_study_render.py``).

- Premise: ``questions`` held-out problems of each kind (hard: a hidden tens word in q0's numbers; easy), ``samples``
  responses of the base (temperature 1) to q0 (spelled) and to each rephrasing form; its raw part is the per-question
  counts (``populations``). Rendered: per kind, the share with 0 of n on q0, pass@1 per form, pass@k on q0, the
  easiest rephrasing and its pass@1 where q0 is 0 of n, the strategy entropy; per knob setting h (a held-out question
  is hard with probability h), the mixtures of the two kinds with a normal 95% interval.
- Probe: the probe's hidden share (q0 0 of 8, a rephrasing right) at h = 0, 0.6, 0.9 with Wilson's interval, against
  the premise's hard share and against what the probe's definition gives on the premise's own questions (8 of their
  64 samples drawn without replacement), also at the hard share of the questions the probe drew. Raw part: the
  probe's shares, question counts and drawn hard share per h.
"""

from __future__ import annotations

import math
import os
import zlib

import numpy as np

from tagrpo.evaluation.tables import markdown_table

KNOB = (0.0, 0.3, 0.6, 0.9)
PROBE_KNOBS = (0.0, 0.6, 0.9)
REPHRASED = ("symbolic", "narrative", "words")  # the main plan's forms, in its order
FORMS = ("symbolic", "words", "narrative", "spelled")  # the knob rows' pass@1, in the regime world's order
PREMISE_RAW = ("command", "machine", "base", "questions_per_kind", "split", "samples", "blind_guess_rate",
               "populations", "wall_s")
PROBE_RAW = ("hard_share", "questions", "n", "probe_hidden", "probe_shares", "probed_hard_share")


def proportion(k: int, n: int) -> tuple[float, float]:
    """A share and its binomial standard error."""
    p = k / n
    return p, math.sqrt(p * (1 - p) / n)


def measure_premise(base: str, questions: int, samples: int, seed: int, split: str, cache: str) -> dict:
    """The premise's raw counts: ``populations`` per kind, each form's per-question correct counts."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from tagrpo.data.jsonl import read_jsonl, write_jsonl
    from tagrpo.evaluation import correct_counts, sample_responses
    from tagrpo.rewards import is_correct
    from tagrpo.toy.regime import question_rows, strategy_entropy, strategy_of

    torch.set_num_threads(os.cpu_count() or 1)
    tok, model = AutoTokenizer.from_pretrained(base), AutoModelForCausalLM.from_pretrained(base)
    populations = {}
    for kind in ("hard", "easy"):
        rows = question_rows(questions, seed=seed + (kind == "easy"), hard_share=1.0 if kind == "hard" else 0.0,
                             split=split)
        answers = [r["answer"] for r in rows]
        per_form, strategies = {}, []
        for form in ("spelled", *REPHRASED):
            key = f"{os.path.basename(base)}-{split}-{kind}-{form}-{samples}"
            path = os.path.join(cache, f"{key}.jsonl")
            if os.path.exists(path):
                responses = [r["responses"] for r in read_jsonl(path)]
            else:
                prompts = [r["prompt"] if form == "spelled" else r["rephrasings"][REPHRASED.index(form)] for r in rows]
                responses = sample_responses(model, tok, prompts, n=samples, temperature=1.0, max_new_tokens=40,
                                             seed=zlib.crc32(key.encode()))
                write_jsonl(path, [{"responses": rs} for rs in responses])
            per_form[form] = correct_counts(responses, answers, is_correct).tolist()  # (Q,)
            strategies += [strategy_of(r) for rs, a in zip(responses, answers, strict=True) for r in rs
                           if is_correct(r, a)]
        populations[kind] = {"counts": per_form, "strategy_entropy_bits": strategy_entropy(strategies)}
    return populations


def summarize_kind(population: dict, n: int) -> dict:
    from tagrpo.evaluation import pass_at_k_curve

    counts = {f: np.array(c) for f, c in population["counts"].items()}  # form -> (Q,)
    zero = counts["spelled"] == 0  # (Q,)
    easiest = max(REPHRASED, key=lambda f: counts[f].mean())
    return {
        "zero_of_n_on_q0": proportion(int(zero.sum()), len(zero)),
        "pass1": {f: float(c.mean() / n) for f, c in counts.items()},
        "pass_at_k_q0": pass_at_k_curve(counts["spelled"], n, [1, 2, 4, 8, 16, 32, 64]),
        "easiest_rephrasing": easiest,
        "easiest_pass1_on_zero_q0": float(counts[easiest][zero].mean() / n) if zero.any() else None,
        "strategy_entropy_bits": population["strategy_entropy_bits"],
    }


def premise_result(raw: dict) -> dict:
    """The premise's JSON from its raw part: the per-kind summaries and the knob's mixtures added."""
    kinds = {kind: summarize_kind(raw["populations"][kind], raw["samples"]) for kind in ("hard", "easy")}
    knob = []
    for h in KNOB:
        (zh, sh), (ze, se) = kinds["hard"]["zero_of_n_on_q0"], kinds["easy"]["zero_of_n_on_q0"]
        share, se_share = h * zh + (1 - h) * ze, math.hypot(h * sh, (1 - h) * se)
        pass1 = {f: h * kinds["hard"]["pass1"][f] + (1 - h) * kinds["easy"]["pass1"][f] for f in FORMS}
        knob.append({"hard_share": h, "zero_of_n_on_q0": share, "ci95": [share - 1.96 * se_share,
                                                                       share + 1.96 * se_share], "pass1": pass1})
    order = (*PREMISE_RAW[:7], "kinds", "knob", *PREMISE_RAW[7:])
    return {k: {**raw, "kinds": kinds, "knob": knob}[k] for k in order}


def premise_markdown(result: dict) -> str:
    n, kinds = result["samples"], result["kinds"]
    rows = [[f"{k['hard_share']:.1f}", f"{100 * k['zero_of_n_on_q0']:.1f} [{100 * k['ci95'][0]:.1f}, "
             f"{100 * k['ci95'][1]:.1f}]", *(f"{100 * k['pass1'][f]:.1f}" for f in ("spelled", *REPHRASED))]
            for k in result["knob"]]
    kind_rows = [[kind, f"{100 * s['zero_of_n_on_q0'][0]:.1f}", *(f"{100 * s['pass1'][f]:.1f}"
                                                                 for f in ("spelled", *REPHRASED)),
                  s["easiest_rephrasing"], "-" if s["easiest_pass1_on_zero_q0"] is None else
                  f"{100 * s['easiest_pass1_on_zero_q0']:.1f}", f"{s['strategy_entropy_bits']:.2f}"]
                 for kind, s in kinds.items()]
    return "\n".join([
        "# The regime world's premise on its base model", "",
        f"`{result['command'].strip()}`", "",
        f"{result['machine']}; base `{result['base']}`; {result['questions_per_kind']} {result['split']} questions of "
        f"each kind x {n} samples per form (temperature 1); blind-guess rate {100 * result['blind_guess_rate']:.2f}%; "
        f"wall {result['wall_s']:.0f} s.", "",
        "Per kind of held-out question (hard: a hidden tens word in q0's numbers):", "",
        markdown_table(["kind", f"0/{n} on q0 (%)", "pass@1 q0", "symbolic", "narrative", "words", "easiest",
                        f"easiest pass@1 where q0 0/{n}", "strategy entropy (bits)"], kind_rows), "",
        "Per knob setting (share of hard questions h; mixtures of the two populations above; the interval is the "
        "normal approximation of the two binomial shares, degenerate where a share is 0 or 1):", "",
        markdown_table(["h", f"held-out 0/{n} on q0 (%) [95% CI]", "pass@1 q0 (%)", "symbolic", "narrative", "words"],
                       rows), ""])


def zero_of(c: int, total: int, n: int) -> float:
    """Chance that ``n`` of ``total`` samples, ``c`` of them right, drawn without replacement, are all wrong."""
    return math.comb(total - c, n) / math.comb(total, n)


def wilson(p: float, q: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson's 95% interval of a share ``p`` of ``q`` questions (not empty at a share of 0 or 1)."""
    centre = (p + z * z / (2 * q)) / (1 + z * z / q)
    half = z * math.sqrt(p * (1 - p) / q + z * z / (4 * q * q)) / (1 + z * z / q)
    return centre - half, centre + half


def expected_hidden(population: dict, total: int, n: int) -> tuple[float, float]:
    """``(P(q0 0 of n), P(q0 0 of n and a rephrasing right))`` averaged over a premise population's questions."""
    counts = population["counts"]
    q0, hidden = [], []
    for i, c in enumerate(counts["spelled"]):
        none = math.prod(zero_of(counts[f][i], total, n) for f in REPHRASED)
        q0.append(zero_of(c, total, n))
        hidden.append(q0[-1] * (1 - none))
    return sum(q0) / len(q0), sum(hidden) / len(hidden)


def probe_row(measured: dict, premise: dict, kinds: dict) -> dict:
    """One h's row from the probe's raw numbers there (``PROBE_RAW``) and the premise's JSON."""
    h, p, q = measured["hard_share"], measured["probe_hidden"], measured["questions"]
    knob = next(k for k in premise["knob"] if abs(k["hard_share"] - h) < 1e-9)
    lo, hi = wilson(p, q)
    expected = h * kinds["hard"][1] + (1 - h) * kinds["easy"][1]
    mix = measured["probed_hard_share"]
    expected_mix = mix * kinds["hard"][1] + (1 - mix) * kinds["easy"][1]
    return {"hard_share": h, "questions": q, "n": measured["n"], "probe_hidden": p, "probe_ci95": [lo, hi],
            "probe_shares": measured["probe_shares"], "premise_hard": knob["zero_of_n_on_q0"],
            "premise_ci95": knob["ci95"], "premise_samples": premise["samples"], "expected_hidden_at_n": expected,
            "definition_shift": expected - knob["zero_of_n_on_q0"],
            "within_premise_interval": knob["ci95"][0] <= p <= knob["ci95"][1],
            "premise_in_probe_interval": lo <= knob["zero_of_n_on_q0"] <= hi,
            "expected_in_probe_interval": lo <= expected <= hi, "probed_hard_share": mix,
            "expected_hidden_at_probed_mix": expected_mix,
            "expected_at_probed_mix_in_probe_interval": lo <= expected_mix <= hi}


def probe_result(command: str, machine: dict, premise: dict, measured: list[dict], wall_s: float) -> dict:
    n = measured[0]["n"]
    kinds = {k: expected_hidden(premise["populations"][k], premise["samples"], n) for k in ("hard", "easy")}
    return {"command": command, "machine": machine, "premise_source": "studies/results/toy_premise.json",
            "per_kind_expected_at_n": kinds, "rows": [probe_row(m, premise, kinds) for m in measured],
            "wall_s": wall_s}


def probe_markdown(result: dict, premise: dict) -> str:
    """The probe's report; ``premise``: the premise's JSON it was compared with."""
    rows, kinds, per_kind = result["rows"], result["per_kind_expected_at_n"], premise["questions_per_kind"]
    n, questions, total = rows[0]["n"], rows[0]["questions"], rows[0]["premise_samples"]

    def pct(x):
        return f"{100 * x:.1f}"

    def yes(b):
        return "yes" if b else "no"

    table = [[f"{r['hard_share']:g}", r["questions"], f"{pct(r['probe_hidden'])} [{pct(r['probe_ci95'][0])}, "
              f"{pct(r['probe_ci95'][1])}]", f"{pct(r['premise_hard'])} [{pct(r['premise_ci95'][0])}, "
              f"{pct(r['premise_ci95'][1])}]", pct(r["expected_hidden_at_n"]), f"{100 * r['definition_shift']:+.1f}",
              yes(r["within_premise_interval"]), yes(r["premise_in_probe_interval"]),
              yes(r["expected_in_probe_interval"]), pct(r["probed_hard_share"]),
              pct(r["expected_hidden_at_probed_mix"]), yes(r["expected_at_probed_mix_in_probe_interval"])]
             for r in rows]
    return "\n".join([
        "# The probe against the premise: hidden share on the regime world (issue 34)", "",
        f"`{result['command'].strip()}`; machine {result['machine']}; wall {result['wall_s']:.0f} s.", "",
        f"Probe: `tagrpo probe --model tagrpo/toy/regime_checkpoint --data toy_regime --hard-share H --n {n}` "
        f"(temperature 1, as the premise), {questions} test questions per H. Premise: "
        f"`studies/results/toy_premise.json` ({per_kind} hard + {per_kind} easy {premise['split']} questions x {total} "
        "samples, mixed per H).", "",
        markdown_table(["h", "questions", f"probe hidden % (0 of {n} on q0, a rephrasing right) [Wilson 95% CI]",
                        f"premise hard % (0 of {total} on q0) [95% CI]",
                        "premise questions under the probe's definition %", "definition shift, pp",
                        "probe inside premise CI", "premise inside probe CI", "definition-adjusted inside probe CI",
                        "hard share of the probed questions %", "expected at that mix %", "inside probe CI"],
                       table), "",
        "The last three columns: the seeded draw of the probe's questions holds its own share of hard questions "
        "(binomial around h); the premise's per-kind rates at the probe's definition, mixed at that share, give "
        "what the probe should measure on exactly these questions.", "",
        f"Definition shift: on the premise's own questions, 'q0 0 of {n} and a rephrasing right' minus "
        f"'q0 0 of {total}', from their counts ({n} of the {total} samples drawn without replacement). Per kind, "
        f"P(q0 0 of {n}) / P(hidden): hard {pct(kinds['hard'][0])}% / {pct(kinds['hard'][1])}%, easy "
        f"{pct(kinds['easy'][0])}% / {pct(kinds['easy'][1])}%.", ""])


def measure_probe(base: str, questions: int, n: int, work_dir: str) -> list[dict]:
    """The probe's raw numbers at each of ``PROBE_KNOBS`` (cached per h under ``work_dir``: resumable)."""
    from tagrpo.data.jsonl import read_jsonl
    from tagrpo.evaluation.probe import ProbeConfig, run_probe
    from tagrpo.toy.plugins import toy_regime_data

    out = []
    for h in PROBE_KNOBS:
        cfg = ProbeConfig(model=base, data="toy_regime", hard_share=h, n=n, questions=questions,
                          output_dir=os.path.join(work_dir, f"h{h:g}"))
        s = run_probe(cfg)
        hard = {r["id"]: bool(r["hard"]) for r in toy_regime_data(h)}
        drawn = [hard[r["id"]] for r in read_jsonl(os.path.join(cfg.output_dir, "counts.jsonl"))]
        out.append({"hard_share": h, "questions": s["questions"], "n": n, "probe_hidden": s["shares"]["hidden"],
                    "probe_shares": s["shares"], "probed_hard_share": sum(drawn) / len(drawn)})
    return out
