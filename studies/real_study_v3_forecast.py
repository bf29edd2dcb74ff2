"""The probe's forecast for a regime of the third real study (issue 45), run and committed before its first arm trains;
and, after the fact, the probe on the second study's task (``--regime v2``: does its advice agree with that verdict?).

    .venv/bin/python studies/real_study_v3_forecast.py --regime natural
    .venv/bin/python studies/real_study_v3_forecast.py --regime v2        # not a forecast: v2's verdict exists

Writes the regime's training set (every training problem, seed 0's order, as its arms see them:
``tagrpo.experiments.tasks.real_regimes.training_rows``; for v2 ``sum_problems.questions``, q0 spelled) to
``outputs/real_study_v3_forecast/<regime>/train.jsonl`` and runs ``tagrpo probe`` on SmolLM2-135M-Instruct with the
study's prompt, sampling and N, G (100 questions x n = 8, about 7 minutes on 2 cores for 12 completion tokens) into
``studies/results/real_study_v3_forecast/<regime>/`` (v2: ``studies/results/real_study_v2_probe/``): probe.md,
probe.json, probe.png, its counts. The equivalent command line is printed.
"""

import argparse
import os
import shlex

from tagrpo.data import sum_problems
from tagrpo.data.jsonl import write_jsonl
from tagrpo.evaluation.probe import ProbeConfig, run_probe
from tagrpo.experiments.declarations.real_v3 import STUDY
from tagrpo.experiments.tasks import real_regimes
from tagrpo.models import fetch_model
from tagrpo.toy import smollm_sums

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
V2_Q0 = "spelled"  # the second study's q0 (studies/results/real_study_v2.json: its premise chose it)


def training_set(regime: str) -> tuple[list[dict], dict, str]:
    """The regime's training rows, its settings and where the probe writes."""
    if regime == "v2":
        rows = sum_problems.questions("train", V2_Q0, "main", seed=0, scheme=smollm_sums.V2["scheme"])
        return rows, smollm_sums.V2, os.path.join(RESULTS, "real_study_v2_probe")
    spec = STUDY.task_options["regimes"][regime]
    group = STUDY.task_options["groups"][spec["group"]]
    cell = {"q0": group["q0"], "seed": 0, "rephrasings": spec["rephrasings"], "problem": group["problem"],
            "rephrased": STUDY.task_options["rephrased"], **({"top": group["top"]} if "top" in group else {})}
    return (real_regimes.training_rows(cell, None), smollm_sums.SETTINGS[group["setting"]],
            os.path.join(RESULTS, "real_study_v3_forecast", regime))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--regime", required=True, choices=(*STUDY.settings, "v2"))
    parser.add_argument("--questions", type=int, default=100)
    args = parser.parse_args()
    rows, setting, out = training_set(args.regime)
    data = write_jsonl(os.path.join("outputs", "real_study_v3_forecast", args.regime, "train.jsonl"), rows)
    arm = smollm_sums.ARMS["ta_grpo"]
    cfg = ProbeConfig(model=fetch_model("smollm2-135m"), data=data, n=8, questions=args.questions, output_dir=out,
                      reward="boxed_or_last_number", num_rephrasings=arm["num_rephrasings"],
                      num_generations=arm["num_generations"], temperature=smollm_sums.TRAIN_TEMPERATURE,
                      max_new_tokens=setting["max_completion_length"], template=setting["template"],
                      chat_template=True, system_prompt=setting["system_prompt"], engine="transformers")
    print("tagrpo probe " + " ".join(f"--{k} {shlex.quote(str(v))}" for k, v in (
        ("model", cfg.model), ("data", data), ("n", cfg.n), ("questions", cfg.questions),
        ("output_dir", cfg.output_dir), ("reward", cfg.reward), ("num_rephrasings", cfg.num_rephrasings),
        ("num_generations", cfg.num_generations), ("temperature", cfg.temperature),
        ("max_new_tokens", cfg.max_new_tokens), ("template", cfg.template), ("system_prompt", cfg.system_prompt),
        ("engine", cfg.engine))) + " --chat_template", flush=True)
    run_probe(cfg)
