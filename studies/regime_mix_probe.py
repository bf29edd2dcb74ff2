"""Issue 19's probe (validation problems only): which regime base lets RL learn the questions it can read?

    .venv/bin/python studies/regime_mix_probe.py spelled17 spelled18 spelled20 slip40_spelled20 slip50_spelled24
    .venv/bin/python studies/toy_premise.py --base outputs/probe19/spelled20 --split validation --questions 50 \\
        --samples 32 --label toy_premise_validation_spelled20
    .venv/bin/python studies/regime_mix_probe.py --rl spelled17 spelled18 spelled20 slip40_spelled20 \\
        slip50_spelled24                                                                              # RL on each

The first builds ``outputs/probe19/NAME`` with ``RegimePretrainConfig``'s other defaults (700 steps, one thread,
deterministic), the corpus mix ``VARIANTS[NAME]`` and no slip, or for ``SLIPS[NAME]`` a mix and the share of the
spelled (q0's form) solutions that slip (add the ``c`` given away: ``tagrpo.toy.regime.corpus``). The second
measures a base's premise (``studies/results/toy_premise_validation_NAME.md``). ``--rl`` asks whether RL can
raise pass@1 on each base: GRPO and GRPO-long at the regime preset's budget, at each rate of ``RL_LRS`` on both
sweep seeds, on validation questions at h=0 (every question readable), against the base on the same questions
(a base not yet built is pretrained first); cells cached under ``outputs/probe19/rl`` (``studies/toy_regime.py``'s
cells, filed under the base's directory name: a changed variant needs a new name, or its cells are reused). Writes
``regime_mix_probe.json`` and ``.md`` into ``studies/results``.
"""

from __future__ import annotations

import json
import os
import sys
import time
from statistics import mean

import torch

from tagrpo.evaluation.tables import markdown_table
from tagrpo.experiments import study
from tagrpo.experiments.cells import run_all
from tagrpo.experiments.machine import machine
from tagrpo.experiments.regime_cells import cell_path, compute
from tagrpo.experiments.verdicts import quarter_mean
from tagrpo.toy.regime_base import RegimePretrainConfig, pretrain_regime_base

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")

VARIANTS = {
    "spelled17": {"symbolic": 0.48, "narrative": 0.15, "reordered": 0.05, "words": 0.15, "spelled": 0.17},
    "spelled18": {"symbolic": 0.47, "narrative": 0.15, "reordered": 0.05, "words": 0.15, "spelled": 0.18},
    "spelled20": {"symbolic": 0.45, "narrative": 0.15, "reordered": 0.05, "words": 0.15, "spelled": 0.20},
    "spelled24": {"symbolic": 0.41, "narrative": 0.15, "reordered": 0.05, "words": 0.15, "spelled": 0.24},
    "spelled30": {"symbolic": 0.35, "narrative": 0.15, "reordered": 0.05, "words": 0.15, "spelled": 0.30},
    "spelled45": {"symbolic": 0.20, "narrative": 0.15, "reordered": 0.05, "words": 0.15, "spelled": 0.45},
}
SLIPS = {"slip40_spelled20": ("spelled20", 0.4), "slip50_spelled24": ("spelled24", 0.5)}  # a mix and a slip
RL_LRS = (1e-5, 3e-5, 1e-4)
RL_ARMS = ("grpo", "grpo_long")
WORK = "outputs/probe19"


def pretrain(name: str) -> str:
    mix, slip = SLIPS[name] if name in SLIPS else (name, 0.0)
    cfg = RegimePretrainConfig(output_dir=os.path.join(WORK, name), mix=VARIANTS[mix], slip=slip)
    return pretrain_regime_base(cfg)


def rl_probe(names: list[str], workers: int = 2, out: str = RESULTS) -> None:
    """GRPO and GRPO-long against the base on validation questions at h=0, per probe base and rate."""
    start, specs = time.perf_counter(), []
    for name in names:
        pretrain(name)  # here, before the workers: they would pretrain the default recipe into a missing base
    for name in names:
        for seed in study.SWEEP_SEEDS:
            common = {"knob": 0.0, "seed": seed, "split": "validation", "samples": study.SWEEP_SAMPLES, "forms": False,
                      "base": os.path.join(WORK, name)}
            specs.append({"kind": "base", **common})
            specs += [{"kind": "arm", "arm": arm, "learning_rate": lr, **common} for arm in RL_ARMS for lr in RL_LRS]
    cells = run_all([(s, cell_path(os.path.join(WORK, "rl"), s)) for s in specs], workers, "rl probe", compute)
    groups: dict[tuple, list[dict]] = {}
    for c in cells.values():
        s = c["spec"]
        key = (os.path.basename(s["base"]), s.get("arm", "base"), s.get("learning_rate", 0.0))
        groups.setdefault(key, []).append(c)
    rows = []
    for (name, arm, lr), cs in sorted(groups.items(), key=lambda kv: (names.index(kv[0][0]), kv[0][1], kv[0][2])):
        steps = [c.get("steps", []) for c in cs]
        trained = arm != "base"
        rows.append({"base": name, "arm": arm, "learning_rate": lr if trained else None, "seeds": len(cs),
                     "pass1": mean(c["pass_at_k"]["1"] for c in cs),
                     "pass16": mean(c["pass_at_k"][str(study.SWEEP_SAMPLES)] for c in cs),
                     "reward_first": mean(quarter_mean(st, "reward", False) for st in steps) if trained else None,
                     "reward_last": mean(quarter_mean(st, "reward", True) for st in steps) if trained else None})
    saved = {"command": "python studies/regime_mix_probe.py --rl " + " ".join(names), "machine": machine(),
             "wall_s": time.perf_counter() - start, "cell_wall_s": sum(c["cell_wall_s"] for c in cells.values()),
             "variants": VARIANTS, "slips": SLIPS, "rows": rows}
    with open(os.path.join(out, "regime_mix_probe.json"), "w", encoding="utf-8") as f:
        json.dump(saved, f, indent=1)

    def pc(x):
        return "-" if x is None else f"{100 * x:.1f}"

    table = [[r["base"], r["arm"], "-" if r["learning_rate"] is None else f"{r['learning_rate']:g}", r["seeds"],
              pc(r["pass1"]), pc(r["pass16"]), pc(r["reward_first"]), pc(r["reward_last"])] for r in rows]
    md = [
        "# Which regime base lets RL learn? (issue 19, validation problems only)",
        "",
        f"Command: `{saved['command']}` (bases from `python studies/regime_mix_probe.py NAME`). Machine: "
        f"{saved['machine']}. The cells' own wall time {saved['cell_wall_s'] / 60:.1f} min (two at a time, one "
        f"thread each); this invocation {saved['wall_s'] / 60:.1f} min (cells cached under `{WORK}/rl` are reused).",
        "",
        "Each base: 700 pretraining steps, the corpus mix of its name (`spelledXX`: XX% of the corpus in q0's spelled "
        "form, the symbolic share lowered to match; the shipped base before this probe had 15%) and, for `slipYY_`, "
        "YY% of the spelled solutions adding the `c` given away instead of subtracting it. GRPO and GRPO-long at the "
        f"regime preset's budget (12 and 48 generation steps x 8 questions, G=4, two optimizer steps each), seeds "
        f"{list(study.SWEEP_SEEDS)}, validation questions at h=0 (none hard), {study.SWEEP_SAMPLES} samples each; "
        "training reward: mean over the first and the last quarter of the generation steps.",
        "",
        markdown_table(["base", "arm", "learning rate", "seeds", "pass@1 %", f"pass@{study.SWEEP_SAMPLES} %",
                        "train reward, first quarter %", "last quarter %"], table),
        "",
        "Best rate's pass@1 change over the base, per base and arm (pp): " + "; ".join(
            f"{name} {arm} {100 * (best - base):+.1f}" for name, arm, best, base in _best_gains(rows)) + ".",
        "",
    ]
    with open(os.path.join(out, "regime_mix_probe.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(md))


def _best_gains(rows: list[dict]) -> list[tuple[str, str, float, float]]:
    """(base name, arm, the arm's best pass@1 over the rates, the base model's pass@1)."""
    base = {r["base"]: r["pass1"] for r in rows if r["arm"] == "base"}
    best: dict[tuple[str, str], float] = {}
    for r in rows:
        if r["arm"] != "base":
            best[(r["base"], r["arm"])] = max(best.get((r["base"], r["arm"]), 0.0), r["pass1"])
    return [(name, arm, value, base[name]) for (name, arm), value in best.items()]


def main(argv: list[str]) -> int:
    rl = argv[:1] == ["--rl"]
    names = argv[1:] if rl else argv
    unknown = [n for n in names if n not in VARIANTS and n not in SLIPS]
    if not names or unknown:
        known = ", ".join([*VARIANTS, *SLIPS])
        raise SystemExit(f"give one or more of: {known} (unknown: {', '.join(unknown) or 'none'})")
    if rl:
        rl_probe(names)
        return 0
    torch.set_num_threads(1)
    for name in names:
        start = time.perf_counter()
        print(f"{name}: {pretrain(name)} ({time.perf_counter() - start:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
