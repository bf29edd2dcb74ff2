"""``tagrpo train``: one job = a ``TrainJob`` (what to train on) plus a ``TAGRPOConfig`` (how).

A YAML file is flat: keys naming a ``TrainJob`` field go to the job, every other key to ``TAGRPOConfig``
(TRL's GRPOConfig fields included), and ``key=value`` overrides on the command line follow the same rule. The
command line's ``--flags`` come from the same two dataclasses (``tagrpo.common.parser.CommandParser``). The file and
the overrides are read as YAML 1.2 scalars (``save_strategy: no`` stays a string, ``1e-6`` is a float) and every
unknown key is named with its closest known one, which TRL's own YAML reading (``TrlParser --config``) does not do.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
from dataclasses import dataclass, field

import torch
import yaml

from tagrpo.common.errors import InputError, closest
from tagrpo.common.modes import check_mode
from tagrpo.data import fit_rephrasings, load_questions
from tagrpo.data.prompts import TEMPLATES, format_prompt
from tagrpo.rewards import REWARDS, get_reward
from tagrpo.trainer.config import TAGRPOConfig
from tagrpo.trainer.lora import check_lora_keys, lora_config

logger = logging.getLogger(__name__)


@dataclass
class TrainJob:
    """What ``tagrpo train`` trains on. Every other key of the config is a ``TAGRPOConfig`` field."""

    model: str = field(metadata={"help": "Local model directory or hub id of a causal LM."})
    data: str = field(metadata={"help": "Rephrased questions: jsonl/json/parquet file, saved dataset or hub id."})
    split: str = field(default="train", metadata={"help": "Split of a dataset dict or hub data set."})
    id_field: str = field(default="id", metadata={"help": "Column holding the question id."})
    prompt_field: str = field(default="prompt", metadata={"help": "Column holding the original question."})
    answer_field: str = field(default="answer", metadata={"help": "Column holding the reference answer."})
    rephrasings_field: str = field(default="rephrasings", metadata={"help": "Column holding the rephrasings."})
    template: str = field(default="paper", metadata={"help": f"Prompt template; one of {tuple(TEMPLATES)}."})
    chat_template: bool = field(default=False, metadata={"help": "Send prompts as a user message (chat)."})
    system_prompt: str | None = field(
        default=None,
        metadata={"help": "With chat_template, a system message before the question ('' an empty one); unset: the "
                  "chat template's own default."},
    )
    reward: str = field(default="math", metadata={"help": f"Reward function; one of {tuple(REWARDS)}."})
    max_questions: int | None = field(default=None, metadata={"help": "Keep only the first K questions."})
    use_peft: bool = field(default=False, metadata={"help": "Train a LoRA adapter (PEFT) instead of every weight."})
    lora_r: int = field(default=16, metadata={"help": "With use_peft, the LoRA rank."})
    lora_alpha: int = field(default=32, metadata={"help": "With use_peft, the LoRA scaling numerator (alpha / r)."})
    lora_dropout: float = field(default=0.05, metadata={"help": "With use_peft, dropout on the LoRA input."})
    lora_target_modules: list[str] | None = field(
        default=None,
        metadata={"help": "With use_peft, the modules to adapt (names, a regular expression or all-linear); unset: "
                  "PEFT's default for the architecture."},
    )


def known_keys() -> set[str]:
    return {f.name for f in dataclasses.fields(TrainJob)} | {f.name for f in dataclasses.fields(TAGRPOConfig) if f.init}


def _unknown(keys, where: str) -> None:
    known = known_keys()
    unknown = [k for k in keys if k not in known]
    if unknown:
        hints = ", ".join(f"{k!r}{closest(k, known)}" for k in unknown)
        raise InputError(f"{where}: unknown key{'s' * (len(unknown) > 1)} {hints} (see `tagrpo train --help`)")


def split_config(values: dict) -> tuple[TrainJob, TAGRPOConfig]:
    """Build the job and the trainer config from one flat mapping; unknown keys raise with their names."""
    job_keys = {f.name for f in dataclasses.fields(TrainJob)}
    cfg_keys = {f.name for f in dataclasses.fields(TAGRPOConfig) if f.init}
    _unknown(values, "config")
    check_lora_keys(values)
    missing = [k for k in ("model", "data") if k not in values]
    if missing:
        raise InputError(f"config lacks required keys: {', '.join(missing)}")
    job = TrainJob(**{k: v for k, v in values.items() if k in job_keys})
    check_mode("template", job.template, tuple(TEMPLATES))
    check_mode("reward", job.reward, tuple(REWARDS))
    trainer_values = {k: v for k, v in values.items() if k in cfg_keys}
    if not torch.cuda.is_available():
        trainer_values.setdefault("use_cpu", True)
        trainer_values.setdefault("bf16", False)
    trainer_values.setdefault("output_dir", "outputs/train")
    defaults = {f.name: f.default for f in dataclasses.fields(TAGRPOConfig)}
    pool = (trainer_values.get("num_rephrasings", defaults["num_rephrasings"]) + 1) * trainer_values.get(
        "num_generations", defaults["num_generations"]
    )
    trainer_values.setdefault("per_device_train_batch_size", pool)  # one whole pool per micro-batch
    return job, TAGRPOConfig(**trainer_values)


class _Loader(yaml.SafeLoader):
    """YAML 1.2 scalars: only true/false are booleans (``save_strategy: no`` stays a string) and ``1e-6`` is a
    float, as users of TRL's configs expect."""


_Loader.yaml_implicit_resolvers = {
    first: [r for r in resolvers if r[0] != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float", re.compile(r"^[-+]?(?:\d+\.?\d*|\.\d+)[eE][-+]?\d+$"), list("-+0123456789.")
)


def load_config(path: str | None, overrides: list[str]) -> dict:
    """Read a flat YAML mapping and apply ``key=value`` overrides (values parsed as YAML scalars)."""
    values = {}
    if path:
        if not os.path.isfile(path):
            raise InputError(f"--config {path}: no such file")
        with open(path, encoding="utf-8") as f:
            values = yaml.load(f, Loader=_Loader) or {}
        if not isinstance(values, dict):
            raise InputError(f"{path}: the config must be a mapping of keys to values")
        _unknown(values, path)
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise InputError(f"override {item!r} must look like key=value")
        _unknown([key.strip()], f"override {item!r}")
        values[key.strip()] = yaml.load(raw, Loader=_Loader)
    return values


def build_rows(job: TrainJob, num_rephrasings: int, short: str) -> tuple[list[dict], dict[str, int]]:
    """Load, validate, fit to N rephrasings and format the questions; returns rows and the counts of the fit."""
    rows = load_questions(
        job.data,
        split=job.split,
        id_field=job.id_field,
        prompt_field=job.prompt_field,
        answer_field=job.answer_field,
        rephrasings_field=job.rephrasings_field,
    )
    if job.max_questions is not None:
        rows = rows[: job.max_questions]
    rows, counts = fit_rephrasings(rows, num_rephrasings, short)
    formatted = [
        {
            "id": str(r["id"]),
            "prompt": format_prompt(r["prompt"], job.template, job.chat_template, job.system_prompt),
            "answer": str(r["answer"]),
            "rephrasings": [format_prompt(t, job.template, job.chat_template, job.system_prompt)
                            for t in r["rephrasings"]],
        }
        for r in rows
    ]
    return formatted, counts


def trainer_class(config: TAGRPOConfig) -> type:
    """The trainer for ``config``: ``TAGRPOTrainer`` for full pools, the opt-in ``AdaptiveTAGRPOTrainer``
    (``tagrpo.trainer.adaptive``) for ``pool_mode="adaptive"`` or ``"history"``."""
    if config.pool_mode == "full":
        from tagrpo.trainer.trainer import TAGRPOTrainer

        return TAGRPOTrainer
    from tagrpo.trainer.adaptive import AdaptiveTAGRPOTrainer

    return AdaptiveTAGRPOTrainer


def run_train(job: TrainJob, config: TAGRPOConfig, callbacks=None):
    """Train and save the final model to ``output_dir/final`` (the adapter alone with ``use_peft``); returns the
    trainer (``trainer_class(config)``)."""
    from datasets import Dataset

    from tagrpo.generation import load_tokenizer
    from tagrpo.models import adapter_base, check_model

    check_model(job.model)
    base = adapter_base(job.model)
    if base is not None:
        raise InputError(f"model {job.model!r} is a LoRA adapter; train from its base model={base} with use_peft=true")
    peft_config = lora_config(job)
    rows, counts = build_rows(job, config.num_rephrasings, config.short_rephrasings)
    if not rows:
        raise InputError(
            f"{job.data}: no questions left to train on (short_rephrasings={config.short_rephrasings!r}: {counts})"
        )
    logger.info("short_rephrasings %r: %s", config.short_rephrasings, counts)
    os.makedirs(config.output_dir, exist_ok=True)
    with open(os.path.join(config.output_dir, "job.json"), "w", encoding="utf-8") as f:
        json.dump(
            {"job": dataclasses.asdict(job), "rephrasing_counts": counts, "trainer": config.to_dict()},
            f,
            indent=2,
            default=str,
        )
    tokenizer = load_tokenizer(job.model)
    trainer = trainer_class(config)(
        model=job.model,
        reward_funcs=[get_reward(job.reward)],
        args=config,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        callbacks=callbacks,
        peft_config=peft_config,
    )
    trainer.train(resume_from_checkpoint=resolve_resume(config.resume_from_checkpoint, config.output_dir))
    trainer.save_model(os.path.join(config.output_dir, "final"))
    return trainer


def resolve_resume(value, output_dir: str) -> str | None:
    """``resume_from_checkpoint``: a checkpoint directory; ``auto``: the latest in ``output_dir`` if any, else a
    fresh start; ``true``: the latest, which must exist; unset or ``false``: a fresh start. "The latest" is the
    latest complete one (``tagrpo.trainer.checkpoint.last_checkpoint``)."""
    from tagrpo.trainer.checkpoint import last_checkpoint

    if value in (None, False, "", "false", "False"):
        return None
    latest = last_checkpoint(output_dir)
    if value == "auto":
        return latest
    if value in (True, "true", "True"):
        if latest is None:
            raise InputError(f"resume_from_checkpoint=true: no complete checkpoint-* directory in {output_dir}")
        return latest
    if not os.path.isdir(str(value)):
        raise InputError(f"resume_from_checkpoint={value!r}: no such checkpoint directory")
    return str(value)
