"""Issue 19's probe (validation problems only): regime bases pretrained on a corpus with more spelled problems.

    .venv/bin/python benchmarks/regime_mix_probe.py spelled30
    .venv/bin/python benchmarks/toy_premise.py --base outputs/probe19/spelled30 --split validation --questions 50 \\
        --samples 32 --label toy_premise_validation_spelled30

The first builds ``outputs/probe19/NAME`` with ``RegimePretrainConfig``'s defaults (700 steps, one thread,
deterministic) and the mix ``VARIANTS[NAME]``; the second measures its premise
(``benchmarks/results/toy_premise_validation_spelled30.md``). The shipped base's mix is ``tagrpo.toy.regime.MIX``
(spelled 0.15).
"""

from __future__ import annotations

import sys
import time

import torch

from tagrpo.toy.regime_base import RegimePretrainConfig, pretrain_regime_base

VARIANTS = {
    "spelled30": {"symbolic": 0.35, "narrative": 0.15, "reordered": 0.05, "words": 0.15, "spelled": 0.30},
    "spelled45": {"symbolic": 0.20, "narrative": 0.15, "reordered": 0.05, "words": 0.15, "spelled": 0.45},
}


def main(names: list[str]) -> int:
    unknown = [n for n in names if n not in VARIANTS]
    if not names or unknown:
        raise SystemExit(f"give one or more of: {', '.join(VARIANTS)} (unknown: {', '.join(unknown) or 'none'})")
    torch.set_num_threads(1)
    for name in names:
        start = time.perf_counter()
        out = pretrain_regime_base(RegimePretrainConfig(output_dir=f"outputs/probe19/{name}", mix=VARIANTS[name]))
        print(f"{name}: {out} ({time.perf_counter() - start:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
