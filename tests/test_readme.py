"""The README as a new user reads it (issue 44): its Python example runs, every command line in it parses with the
real parsers (``tagrpo``, ``accelerate launch``, ``make``, ``pip`` extras; nothing executes), so a changed flag,
default or target fails here; and each thing a new user tripped over stays fixed."""

from __future__ import annotations

import ast
import dataclasses
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import tagrpo.evaluation.probe as probe_module
import tagrpo.evaluation.run as eval_module
import tagrpo.models as models_module
import tagrpo.rephrase.run as rephrase_module
import tagrpo.trainer.run as train_module
from tagrpo.cli import main
from tagrpo.cli.main import resolve

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def code_blocks(text: str, language: str) -> list[str]:
    return [body for lang, body in FENCE.findall(text) if lang == language]


def command_lines(body: str) -> list[list[str]]:
    """Each command of a shell block as its words: ``\\`` continuations joined, ``# comments`` dropped."""
    joined = re.sub(r"\\\n", " ", body)
    return [words for line in joined.splitlines() if (words := shlex.split(line, comments=True))]


def inline_spans(text: str) -> list[str]:
    """The prose's inline code (outside the fenced blocks), whitespace collapsed."""
    return [" ".join(span.split()) for span in re.findall(r"`([^`\n]+(?:\n[^`\n]+)?)`", FENCE.sub("", text))]


README_COMMANDS = [words for body in code_blocks(README, "bash") for words in command_lines(body)]


def test_the_extractor_reads_continuations_and_comments():
    body = 'tagrpo eval --model m \\\n    --n 4   # four samples\nmake demo  # the demo\npip install -e ".[a,b]"\n'
    assert command_lines(body) == [["tagrpo", "eval", "--model", "m", "--n", "4"], ["make", "demo"],
                                   ["pip", "install", "-e", ".[a,b]"]]
    assert ["make", "demo"] in README_COMMANDS and len(README_COMMANDS) >= 10


# --- every command line, parsed ---------------------------------------------------------------------------------


def _extras() -> set[str]:
    tomllib = pytest.importorskip("tomllib")
    with open(ROOT / "pyproject.toml", "rb") as f:
        return set(tomllib.load(f)["project"]["optional-dependencies"])


def _make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text()
    return {m for m in re.findall(r"^([A-Za-z0-9_.$()/-]+)\s*:(?!=)", text, re.M)}


@pytest.fixture
def parsed(monkeypatch):
    """``parse(words)`` runs a README command through the real parsers with the commands' work stubbed out, and
    returns what the command would have run with."""
    seen = {}
    monkeypatch.chdir(ROOT)  # the commands' relative paths (configs/...) are the repository's
    monkeypatch.setattr(train_module, "run_train", lambda job, config: seen.update(job=job, config=config))
    monkeypatch.setattr(eval_module, "run_eval", lambda cfg: seen.update(config=cfg))
    monkeypatch.setattr(probe_module, "run_probe", lambda cfg: seen.update(config=cfg))
    monkeypatch.setattr(rephrase_module, "run_rephrase", lambda cfg: seen.update(config=cfg))
    monkeypatch.setattr(models_module, "fetch_model", lambda name, cache_dir, log: seen.update(name=name) or name)
    import tagrpo.demo.config as demo_module

    monkeypatch.setattr(demo_module, "run_demo", lambda cfg: seen.update(config=cfg))

    def parse(words: list[str]) -> dict:
        seen.clear()
        if words[0] == "tagrpo":
            assert main(words[1:]) == 0, words
            return dict(seen)
        if words[:2] == ["accelerate", "launch"]:
            from accelerate.commands.launch import launch_command_parser

            args = launch_command_parser().parse_args(words[2:])
            assert args.module and args.training_script == "tagrpo", words
            processes = args.num_processes
            if processes is None and args.config_file:
                import yaml

                processes = yaml.safe_load((ROOT / args.config_file).read_text())["num_processes"]
            assert main(args.training_script_args) == 0, words
            return {**seen, "processes": processes}
        if words[0] == "make":
            missing = set(words[1:]) - _make_targets()
            assert not missing, f"{words}: no such Makefile target {missing}"
            return {}
        if words[:3] == ["pip", "install", "-e"]:
            extras = re.fullmatch(r"\.(?:\[([\w,]+)\])?", words[3]).group(1)
            missing = set((extras or "").split(",")) - _extras() - {""}
            assert not missing, f"{words}: no such extra {missing}"
            return {}
        if words[0] == "export" and "=" in words[1]:
            return {}
        raise AssertionError(f"README command of an unknown kind (teach tests/test_readme.py to parse it): {words}")

    return parse


@pytest.mark.parametrize("words", README_COMMANDS, ids=lambda w: " ".join(w)[:60])
def test_every_readme_command_parses(words, parsed):
    parsed(words)


def test_inline_commands_and_keys_exist(parsed):
    """Commands and ``key=value`` settings quoted in the prose name real commands, train keys and files."""
    checked = 0
    for span in inline_spans(README):
        words = shlex.split(span)
        if words[0] == "tagrpo":
            resolve(words[1:] or ["--help"])  # the command names exist (their arguments are not all given)
        elif words[0] == "make" or words[:3] == ["pip", "install", "-e"]:
            parsed(words)
        elif re.fullmatch(r"[A-Z_]+=\S+", span):  # a make variable
            assert re.search(rf"^{span.split('=')[0]} \??=", (ROOT / "Makefile").read_text(), re.M), span
        elif all(re.fullmatch(r"[a-z_]+=[^=\s]\S*", w) for w in words):
            unknown = {w.split("=")[0] for w in words} - train_module.known_keys()
            assert not unknown, f"`{span}`: no such train key {unknown}"
        else:
            continue
        checked += 1
    assert checked >= 10
    for path in re.findall(r"\]\(((?!https?:)[^)#]+)", README) + re.findall(r"\bconfigs/[\w./-]+\.yaml", README):
        assert (ROOT / path).exists(), path


def test_the_paper_run_is_256_rows_in_two_optimizer_steps(parsed):
    """README: "256 rows per rollout batch in two optimizer steps" on `accelerate launch --num_processes 4`: 4
    processes x 32 rows x gradient_accumulation_steps 1 = the paper's 128-row step (docs/gpu.md). The same for every
    multi-process command of the shipped config in README, docs/training.md and docs/gpu.md."""
    rows, steps = re.search(r"(\d+) rows per rollout batch in (\w+) optimizer steps", README).groups()
    launches = [words for doc in ("README.md", "docs/training.md", "docs/gpu.md")
                for body in code_blocks((ROOT / doc).read_text(encoding="utf-8"), "bash")
                for words in command_lines(body)
                if words[:2] == ["accelerate", "launch"] and "configs/ta_grpo_qwen3_1.7b_math.yaml" in words]
    assert len(launches) >= 4
    for words in launches:
        seen = parsed(words)
        config = seen["config"]
        per_step = config.per_device_train_batch_size * seen["processes"] * config.gradient_accumulation_steps
        assert (per_step, config.generation_batch_size) == (128, int(rows)), words
        assert config.generation_batch_size // per_step == {"two": 2}[steps]


# --- the Python example ------------------------------------------------------------------------------------------


def _readme_python() -> str:
    (block,) = [b for b in code_blocks(README, "python") if "TAGRPOConfig(" in b]
    return block


def _cpu() -> dict:
    import torch

    return {} if torch.cuda.is_available() else {"use_cpu": True, "bf16": False}


def test_the_readme_config_holds_whole_pools():
    """README's config, as written, once raised "generation_batch_size (8) must hold whole pools of 32 rows":
    an unset per-device batch is now one pool; a given one is kept."""
    from tagrpo.trainer import TAGRPOConfig

    call = next(n for n in ast.walk(ast.parse(_readme_python())) if isinstance(n, ast.Call)
                and getattr(n.func, "id", None) == "TAGRPOConfig")
    kwargs = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
    assert kwargs == {"output_dir": "runs/ta_grpo", "num_rephrasings": 3, "num_generations": 8, "anchor": "original"}
    config = TAGRPOConfig(**kwargs, **_cpu())
    assert config.per_device_train_batch_size == config.pool_size == 32
    assert config.generation_batch_size % config.pool_size == 0
    assert TAGRPOConfig(**kwargs, **_cpu(), per_device_train_batch_size=64).per_device_train_batch_size == 64


@pytest.mark.slow  # 4 s on idle cores, 13 s on busy ones
def test_the_readme_python_example_trains_one_step(tmp_path, monkeypatch):
    """The block runs as written, on the shipped toy model and two toy questions, for one step."""
    import tagrpo.trainer as trainer_module
    from tagrpo.data.named import load_named

    real_config, real_trainer = trainer_module.TAGRPOConfig, trainer_module.TAGRPOTrainer
    made = {}

    def config(**kwargs):  # the README's fields, then what keeps the test small
        made["config"] = real_config(**{**kwargs, "output_dir": str(tmp_path / "run"), "max_steps": 1,
                                        "max_completion_length": 8, "report_to": [], "save_strategy": "no",
                                        "disable_tqdm": True, **_cpu()})
        return made["config"]

    def trainer(*, model, **kwargs):
        assert model == "Qwen/Qwen3-1.7B-Base"
        made["trainer"] = real_trainer(model=models_module.resolve_model("toy_regime"), **kwargs)
        return made["trainer"]

    monkeypatch.setattr(trainer_module, "TAGRPOConfig", config)
    monkeypatch.setattr(trainer_module, "TAGRPOTrainer", trainer)
    from datasets import Dataset

    rows = [{k: r[k] for k in ("id", "prompt", "answer", "rephrasings")} for r in load_named("toy_regime")[:2]]
    exec(_readme_python(), {"dataset": Dataset.from_list(rows)})  # noqa: S102 (the README's own code)
    assert made["trainer"].state.global_step == 1 and made["config"].per_device_train_batch_size == 32


# --- what a new user tripped over ------------------------------------------------------------------------------


def test_eval_names_the_bad_n(capsys):
    assert main(["eval", "--model", "toy_regime", "--n", "-1"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "--n -1: must be at least 1" in line and "--k" not in line


@pytest.mark.parametrize(("argv", "target", "expected"), [
    (["probe", "--model", "toy_regime", "--data", "toy_regime"], (probe_module, "run_probe"),
     "tagrpo probe: interrupted; rerun the same command to resume"),
    (["eval", "--model", "toy_regime"], (eval_module, "run_eval"),
     "tagrpo eval: interrupted; rerun the same command to resume"),
    (["rephrase", "--data", "toy_world", "--backend", "rule", "--out", "o.jsonl"], (rephrase_module, "run_rephrase"),
     "tagrpo rephrase: interrupted; rerun the same command to resume"),
    (["train", "model=m", "data=d.jsonl"], (train_module, "run_train"),
     "tagrpo train: interrupted; rerun the same command with resume_from_checkpoint=auto"),
])
def test_ctrl_c_prints_one_line(argv, target, expected, monkeypatch, capsys):
    def stop(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(*target, stop)
    assert main(argv) == 130
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(expected)


@pytest.mark.slow
def test_ctrl_c_during_a_probe_keeps_its_counts_and_resumes(tmp_path):
    """SIGINT to a real ``tagrpo probe``: exit status 130, one line and no traceback; the questions finished stay
    in counts.jsonl, and the same command run again takes them from there. The probe starts with SIGINT's default
    disposition, as a command typed in a terminal does: a test suite launched in the background (``make test &``)
    ignores SIGINT, its children inherit that, and Python then installs no KeyboardInterrupt handler at all."""
    from tagrpo.data.jsonl import read_jsonl

    def as_typed():
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    out = tmp_path / "probe"
    base = [sys.executable, "-m", "tagrpo", "probe", "--model", "toy_regime", "--data", "toy_regime"]
    tail = ["--chunk-questions", "1", "--output-dir", str(out)]
    proc = subprocess.Popen([*base, "--questions", "200", *tail], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=as_typed)
    counts, deadline = out / "counts.jsonl", time.monotonic() + 600  # seconds on an idle machine; far more loaded
    while not (counts.exists() and counts.read_text().count("\n") >= 2):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the probe wrote fewer than 2 questions in 600 s"
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and err.strip().splitlines()[-1] == (
        "tagrpo probe: interrupted; rerun the same command to resume")
    done = read_jsonl(str(counts), repair=True)
    assert 2 <= len(done) < 200
    again = subprocess.run([*base, "--questions", str(len(done)), *tail], cwd=tmp_path, capture_output=True,
                           text=True, timeout=120)  # the first k questions of the draw: all of them cached
    assert again.returncode == 0 and f"{len(done)} cached, 0 to sample" in again.stdout, again.stderr


def test_demo_with_no_flags_is_make_demo_and_points_at_the_current_study():
    from tagrpo.demo.config import DemoConfig
    from tagrpo.demo.report import VERDICTS

    assert "tagrpo demo --preset regime" in (ROOT / "Makefile").read_text()
    assert DemoConfig().preset == "regime" and DemoConfig().world == "regime"
    assert "studies/results/toy_regime_v2.md" in VERDICTS["regime"]
    assert "make demo   # = tagrpo demo" in README


def test_readme_names_the_command_that_fetches_smollm2(parsed):
    fetches = [w for w in README_COMMANDS if w[:3] == ["tagrpo", "models", "fetch"]]
    assert fetches and all(parsed(w)["name"] in models_module.MODELS for w in fetches)


def test_the_toy_models_load_from_any_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in ("toy_regime", "tagrpo/toy/regime_checkpoint", "toy_world"):
        path = models_module.resolve_model(name)
        assert os.path.isabs(path) and models_module.check_model(path) == path
        assert probe_module.ProbeConfig(model=name, data="toy_regime").model == path
        assert eval_module.EvalConfig(model=name).model == path
    (tmp_path / "toy_regime").mkdir()  # a directory of that name wins
    assert models_module.resolve_model("toy_regime") == "toy_regime"
    assert models_module.resolve_model("Qwen/Qwen3-1.7B-Base") == "Qwen/Qwen3-1.7B-Base"


def test_help_names_every_template_and_loads_no_torch():
    from tagrpo.data.prompts import TEMPLATES

    for cls in (eval_module.EvalConfig, probe_module.ProbeConfig, train_module.TrainJob):
        text = {f.name: f.metadata["help"] for f in dataclasses.fields(cls)}["template"]
        assert all(name in text for name in TEMPLATES), (cls.__name__, text)
    code = ("import sys\nfrom tagrpo.cli import main\nfor argv in ({}):\n    try:\n        main(argv)\n"
            "    except SystemExit:\n        pass\n"
            "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules), file=sys.stderr)")
    commands = ("['probe', '--help'], ['eval', '--help'], ['rephrase', '--help'], ['models', 'fetch', '--help'], "
                "['demo', '--help']")
    done = subprocess.run([sys.executable, "-c", code.format(commands)], capture_output=True, text=True, check=True)
    assert done.stderr.strip().splitlines()[-1] == "[]", done.stderr
    assert "oneshot" in done.stdout


def test_every_interval_in_does_it_help_is_a_committed_verdict():
    """Each "mean [lo, hi]" of the README's "Does it help?" table is a verdict of the forecast-against-verdict table
    (which is rebuilt from the studies' JSON by the regime map), to the printed 0.1 pp."""
    import json

    section = README.split("## Does it help?", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "[" in line]
    shown = re.findall(r"([+-]?\d+\.\d) \[([+-]?\d+\.\d), ([+-]?\d+\.\d)\]", "\n".join(rows))
    table = json.loads((ROOT / "studies" / "results" / "forecast_vs_verdict.json").read_text(encoding="utf-8"))
    verdicts = [[100 * v[key] for key in ("mean", "lo", "hi")]
                for row in table["rows"] for v in row["verdict"].values() if v is not None]

    def printed(t) -> bool:  # to 0.1 pp: the map stores 4 decimals, so -0.1825 may print as -18.2 or -18.3
        return any(all(abs(float(x) - y) <= 0.05 + 1e-9 for x, y in zip(t, v, strict=True)) for v in verdicts)

    assert len(shown) >= 10
    assert not [t for t in shown if not printed(t)]
