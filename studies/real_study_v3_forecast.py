"""The probe's forecast for a regime of the third real study (issue 45), run and committed before its first arm trains.

    .venv/bin/python studies/real_study_v3_forecast.py --regime natural

Writes the regime's training set (every training problem, seed 0's order, as its arms see them:
``tagrpo.experiments.tasks.real_regimes.training_rows``) to ``outputs/real_study_v3_forecast/<regime>/train.jsonl``
and runs ``tagrpo probe`` on SmolLM2-135M-Instruct with the study's prompt, sampling and N, G (100 questions x
n = 8, about 7 minutes on 2 cores) into ``studies/results/real_study_v3_forecast/<regime>/`` (probe.md, probe.json,
probe.png, its counts). The equivalent command line is printed.
"""

import argparse
import os
import shlex

from tagrpo.data.jsonl import write_jsonl
from tagrpo.evaluation.probe import ProbeConfig, run_probe
from tagrpo.experiments.declarations.real_v3 import STUDY
from tagrpo.experiments.tasks import real_regimes, sums
from tagrpo.models import fetch_model

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "real_study_v3_forecast")

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--regime", required=True, choices=STUDY.settings)
    parser.add_argument("--questions", type=int, default=100)
    args = parser.parse_args()
    regime = STUDY.task_options["regimes"][args.regime]
    group = STUDY.task_options["groups"][regime["group"]]
    setting = sums.SETTINGS[group["setting"]]
    spec = {"q0": group["q0"], "seed": 0, "rephrasings": regime["rephrasings"],
            "rephrased": STUDY.task_options["rephrased"]}
    work = os.path.join("outputs", "real_study_v3_forecast", args.regime)
    data = write_jsonl(os.path.join(work, "train.jsonl"), real_regimes.training_rows(spec, None))
    arm = sums.ARMS["ta_grpo"]
    cfg = ProbeConfig(model=fetch_model("smollm2-135m"), data=data, n=8, questions=args.questions,
                      output_dir=os.path.join(RESULTS, args.regime), reward="boxed_or_last_number",
                      num_rephrasings=arm["num_rephrasings"], num_generations=arm["num_generations"],
                      temperature=sums.TRAIN_TEMPERATURE, max_new_tokens=setting["max_completion_length"],
                      template=setting["template"], chat_template=True, system_prompt=setting["system_prompt"],
                      engine="transformers")
    print("tagrpo probe " + " ".join(f"--{k} {shlex.quote(str(v))}" for k, v in (
        ("model", cfg.model), ("data", data), ("n", cfg.n), ("questions", cfg.questions),
        ("output_dir", cfg.output_dir), ("reward", cfg.reward), ("num_rephrasings", cfg.num_rephrasings),
        ("num_generations", cfg.num_generations), ("temperature", cfg.temperature),
        ("max_new_tokens", cfg.max_new_tokens), ("template", cfg.template), ("system_prompt", cfg.system_prompt),
        ("engine", cfg.engine))) + " --chat_template", flush=True)
    run_probe(cfg)
