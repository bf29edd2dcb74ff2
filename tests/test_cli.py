"""``tagrpo train`` and ``tagrpo demo`` end to end on tiny local models, and the config plumbing."""

from __future__ import annotations

import json

import pytest
from conftest import pool_rows

from tagrpo.cli import main
from tagrpo.trainer.run import load_config, split_config


def _write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def test_config_keys_are_split_between_job_and_trainer(tmp_path):
    cfg_file = tmp_path / "c.yaml"
    cfg_file.write_text("model: m\ndata: d.jsonl\nnum_rephrasings: 2\nnum_generations: 4\ntemplate: plain\n")
    values = load_config(str(cfg_file), ["anchor=none", "learning_rate=1e-6", "per_device_train_batch_size=12"])
    job, config = split_config(values)
    assert (job.model, job.data, job.template) == ("m", "d.jsonl", "plain")
    assert (config.num_rephrasings, config.anchor, config.learning_rate, config.pool_size) == (
        2,
        "none",
        1e-6,
        12,
    )


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"model": "m", "data": "d", "anchr": "none"}, "config: unknown key 'anchr'; did you mean 'anchor'\\?"),
        ({"data": "d"}, "config lacks required keys: model"),
        (
            {"model": "m", "data": "d", "template": "fancy"},
            "template='fancy' is not valid; expected one of: 'paper'",
        ),
        ({"model": "m", "data": "d", "advantage_scope": "batch"}, "expected one of: 'pool', 'variant'"),
    ],
)
def test_bad_config_is_rejected_with_its_key(values, message):
    with pytest.raises(ValueError, match=message):
        split_config(values)


def test_override_must_be_key_value():
    with pytest.raises(ValueError, match="must look like key=value"):
        load_config(None, ["anchor"])


def test_bad_input_gives_one_line_naming_the_thing(model_dirs, tmp_path, capsys):
    """Each of these once gave a traceback, a hub message or a wait of half a minute."""
    cfg = tmp_path / "run.yaml"
    cfg.write_text("model: m\ndata: d\nlerning_rate: 1e-6\n")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    good = _write_jsonl(tmp_path / "ok.jsonl", pool_rows(num_questions=2))
    model = model_dirs["qwen3"]
    cases = [
        (["train", "--config", str(cfg)], f"{cfg}: unknown key 'lerning_rate'; did you mean 'learning_rate'?"),
        (["train", f"model={tmp_path / 'no' / 'model'}", f"data={good}"], "no such directory"),
        (["train", f"model={model}", "data=nope_bench"], "data 'nope_bench': no such file or directory"),
        (["train", f"model={model}", f"data={empty}"], f"{empty}: the file is empty (no rows)"),
        (["train", f"model={model}", f"data={good}", "num_generatons=2"], "did you mean 'num_generations'?"),
        (["eval", "--model", model, "--k", "a,b"], "--k 'a,b': expected comma-separated whole numbers"),
        (["eval", "--model", model, "--benchmarks", "amc"], "did you mean 'amc23'?"),
    ]
    for argv, expected in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and expected in err[0], (argv, err)


def test_a_bug_keeps_its_traceback(monkeypatch):
    import tagrpo.trainer.run as run

    def broken(*args, **kwargs):
        raise ValueError("an internal invariant failed")

    monkeypatch.setattr(run, "split_config", broken)
    with pytest.raises(ValueError, match="internal invariant"):
        main(["train", "model=m", "data=d"])


def test_train_command_end_to_end(model_dirs, tmp_path):
    rows = pool_rows(num_questions=4)
    rows[1]["rephrasings"] = rows[1]["rephrasings"][:1]  # short: filled with the original question
    data = _write_jsonl(tmp_path / "train.jsonl", rows)
    out = tmp_path / "run"
    code = main(
        [
            "train",
            f"model={model_dirs['llama']}",
            f"data={data}",
            f"output_dir={out}",
            "template=plain",
            "num_generations=2",
            "per_device_train_batch_size=8",
            "max_steps=1",
            "max_completion_length=4",
            "report_to=[]",
            "save_strategy=no",
            "disable_tqdm=true",
            "beta=0.001",
        ]
    )
    assert code == 0
    assert (out / "final" / "config.json").exists()
    job = json.loads((out / "job.json").read_text())
    assert job["rephrasing_counts"] == {"complete": 3, "filled": 1, "dropped": 0, "truncated": 0}
    assert job["trainer"]["anchor"] == "original"


def test_train_command_names_the_bad_row(model_dirs, tmp_path, capsys):
    rows = pool_rows(num_questions=3)
    del rows[1]["answer"]
    data = _write_jsonl(tmp_path / "bad.jsonl", rows)
    code = main(["train", f"model={model_dirs['qwen3']}", f"data={data}", f"output_dir={tmp_path / 'o'}"])
    assert code == 2
    err = capsys.readouterr().err
    assert "bad.jsonl, row 2, field 'answer'" in err
    assert not (tmp_path / "o" / "job.json").exists()


@pytest.mark.slow
def test_quick_demo_runs_end_to_end(tmp_path):
    code = main(["demo", "--quick", "--output-dir", str(tmp_path)])
    assert code == 0
    result = json.loads((tmp_path / "metrics.json").read_text())
    runs = result["runs"]
    assert list(runs) == ["base", "grpo", "augmentation", "equal_sampling", "ta_grpo"]
    # 6 steps x 4 questions: G=4 for GRPO, (3+1) x 4 for the others
    assert [runs[m]["rollouts"] for m in list(runs)[1:]] == [96, 384, 384, 384]
    for name in list(runs)[1:]:
        assert len(runs[name]["steps"]) == 6 and len(runs[name]["curve"]) >= 2
        assert all(0.0 <= v <= 1.0 for v in runs[name]["pass_at_k"].values())
        assert runs[name]["completion_tokens"] > runs[name]["rollouts"]  # every completion has several tokens
    assert runs["augmentation"]["advantage_scope"] == "variant" and runs["augmentation"]["anchor"] == "none"
    assert set(result["premise"]) == {"symbolic", "words", "narrative", "reordered", "spelled", "renamed"}
    for png in ("uniform_share.png", "pass_at_k.png", "pass1_vs_rollouts.png"):
        assert (tmp_path / png).stat().st_size > 10_000
    report = (tmp_path / "report.md").read_text()
    assert "Quick preset" in report and "**One seed**" in report and "toy_reproduction.md" in report
    assert "reproduced" not in report and " met" not in report  # one seed decides nothing


@pytest.mark.parametrize("name", ["ta_grpo_qwen3_1.7b_math.yaml", "grpo_qwen3_1.7b_math.yaml"])
def test_shipped_configs_are_valid(name):
    from pathlib import Path

    path = Path(__file__).parent.parent / "configs" / name
    job, config = split_config(load_config(str(path), ["bf16=false", "use_vllm=false"]))
    assert job.template == "paper" and config.learning_rate == 1e-6 and config.beta == 0.001
    assert config.generation_batch_size == 256 and config.generation_batch_size % config.pool_size == 0


def test_rephrase_rule_backend_output_trains(model_dirs, tmp_path):
    from tagrpo.data import load_questions
    from tagrpo.toy.world import parse

    out = tmp_path / "toy.jsonl"
    assert (
        main(["rephrase", "--data", "toy_world", "--backend", "rule", "--n", "3", "--limit", "4", "--out", str(out)])
        == 0
    )
    rows = load_questions(str(out))
    assert len(rows) == 4 and all(len(r["rephrasings"]) == 3 for r in rows)
    for r in rows:
        a, b, c = parse(r["prompt"])
        assert all(sum(parse(t)[:2]) - parse(t)[2] == a + b - c == int(r["answer"]) for t in r["rephrasings"])
    code = main(
        [
            "train",
            f"model={model_dirs['qwen3']}",
            f"data={out}",
            f"output_dir={tmp_path / 'run'}",
            "template=plain",
            "num_generations=2",
            "max_steps=1",
            "max_completion_length=4",
            "report_to=[]",
            "save_strategy=no",
            "disable_tqdm=true",
        ]
    )
    assert code == 0 and (tmp_path / "run" / "final" / "config.json").exists()


def test_help_and_version_import_nothing_heavy():
    import subprocess
    import sys

    code = ("import sys; from tagrpo.cli import build_parser; build_parser(); "
            "print(sorted(m for m in ('torch', 'transformers', 'trl', 'datasets') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    version = subprocess.run([sys.executable, "-m", "tagrpo", "--version"], capture_output=True, text=True)
    assert version.stdout.strip() == "tagrpo 0.1.0"


def test_train_flags_yaml_and_overrides_compose(tmp_path, monkeypatch):
    import tagrpo.trainer.run as run

    seen = {}
    monkeypatch.setattr(run, "run_train", lambda job, config: seen.update(job=job, config=config))
    cfg = tmp_path / "c.yaml"
    cfg.write_text("model: m\ndata: d.jsonl\nlearning_rate: 1e-6\nchat_template: true\nanchor: none\n")
    argv = ["train", "--config", str(cfg), "anchor=behavior", "--num_rephrasings", "2", "--chat_template", "false",
            "--learning-rate", "3e-5"]
    assert main(argv) == 0
    job, config = seen["job"], seen["config"]
    assert job.chat_template is False and config.anchor == "behavior" and config.num_rephrasings == 2
    assert config.learning_rate == 3e-5 and job.model == "m"  # the flag wins over the YAML file


def test_train_help_lists_every_field_with_its_choices(capsys):
    import dataclasses

    from tagrpo.trainer.config import TAGRPOConfig
    from tagrpo.trainer.run import TrainJob

    with pytest.raises(SystemExit):
        main(["train", "--help"])
    text = capsys.readouterr().out
    for f in [*dataclasses.fields(TrainJob), *dataclasses.fields(TAGRPOConfig)]:
        if f.init:
            assert f"--{f.name}" in text, f.name
    for choices in ("{original,none,behavior,generating}", "{pool,variant}", "{fill_original,cycle,drop}",
                    "{group,none}", "{full,adaptive,history}", "{dapo,grpo,bnpo,dr_grpo}"):
        assert choices in text


def test_other_commands_have_help_choices_and_negatable_booleans(capsys):
    for argv, expected in ((["eval", "--help"], ["{auto,vllm,transformers}", "--no-chat-template", "--overwrite"]),
                           (["demo", "--help"], ["{quick,default,regime}", "--arms", "--learning-rates"]),
                           (["rephrase", "--help"], ["{openai,transformers,rule}", "--token-limit-param"])):
        with pytest.raises(SystemExit):
            main(argv)
        text = capsys.readouterr().out
        assert all(e in text for e in expected), (argv, [e for e in expected if e not in text])


def test_train_accepts_anchor_generating_and_stores_none(tmp_path):
    values = load_config(None, ["model=m", "data=d.jsonl", "anchor=generating", "num_generations=2",
                                "per_device_train_batch_size=8"])
    _, config = split_config(values)
    assert config.anchor == "none"

