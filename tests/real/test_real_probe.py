"""``tagrpo probe`` on SmolLM2-135M-Instruct with the real study's sums (its forms as typed rephrasings): a short
probe writes its three files, its classes sum to one, and the symbolic form is no harder than q0's spelled one."""

from __future__ import annotations

import json
from pathlib import Path

from script_loader import load_script

from tagrpo.cli import main

ROOT = Path(__file__).resolve().parents[2]


def test_probe_of_the_sums_task(smollm2, tmp_path):
    from tagrpo.data.jsonl import write_jsonl

    bench = load_script(ROOT / "benchmarks" / "probe_time.py")
    data = write_jsonl(str(tmp_path / "sums.jsonl"), bench.sums_rows(0))
    out = tmp_path / "probe"
    argv = ["probe", "--model", smollm2, "--data", data, "--questions", "4", "--n", "4", "--template", "oneshot",
            "--chat-template", "--system-prompt", "", "--max-new-tokens", "12", "--temperature", "0.7",
            "--reward", "boxed_or_last_number", "--num-generations", "2", "--engine", "transformers",
            "--output-dir", str(out)]
    assert main(argv) == 0
    report = json.loads((out / "probe.json").read_text())
    assert {"probe.json", "probe.md", "probe.png"} <= {p.name for p in out.iterdir()}
    assert report["questions"] == 4 and abs(sum(report["shares"].values()) - 1) < 1e-9
    assert set(report["per_type"]) == {"symbolic", "words", "narrative"}
    assert main(argv) == 0 and json.loads((out / "probe.json").read_text())["sampled"] == 0
