"""The ``tagrpo`` command: parse -> config -> call.

Only the chosen subcommand's configuration is imported (torch, transformers and TRL load for the command that
needs them), so ``tagrpo --help`` and ``tagrpo --version`` answer at once. Errors of the project's own kind
(``tagrpo.errors.TagrpoError``: a bad flag value, file, row, URL or model) print as one line with exit status 2;
anything else keeps its traceback.
"""

from __future__ import annotations

import argparse
import logging
import sys

from tagrpo import __version__
from tagrpo.errors import TagrpoError

TRAIN_EPILOG = """\
A YAML file (--config) is flat: keys of the job (the first group above) and of TAGRPOConfig / TRL's GRPOConfig.
key=value overrides (parsed as YAML scalars) and --flags override it, in that order. Examples:
  tagrpo train --config configs/ta_grpo_qwen3_1.7b_math.yaml data=rephrased.jsonl
  tagrpo train --model Qwen/Qwen3-1.7B-Base --data rephrased.jsonl --num_rephrasings 3 --anchor original
"""


def _train_fields() -> argparse.ArgumentParser:
    """Every ``TrainJob`` and ``TAGRPOConfig`` field as a flag (transformers' ``HfArgumentParser``), unset ones
    absent from the result; the named modes list their valid values."""
    from transformers import HfArgumentParser

    from tagrpo.core import ANCHOR_ALIASES, ANCHORS, ENGINE_CORRECTIONS, SCOPES
    from tagrpo.data import SHORT_RULES
    from tagrpo.data.prompts import TEMPLATES
    from tagrpo.rewards import REWARDS
    from tagrpo.trainer.config import LOSS_TYPES, POOL_MODES, TAGRPOConfig
    from tagrpo.trainer.run import TrainJob

    modes = {"anchor": ANCHORS + tuple(ANCHOR_ALIASES), "advantage_scope": SCOPES, "short_rephrasings": SHORT_RULES,
             "scale_rewards": ("group", "none"), "pool_mode": POOL_MODES, "loss_type": LOSS_TYPES,
             "engine_correction": ENGINE_CORRECTIONS,
             "template": tuple(TEMPLATES), "reward": tuple(REWARDS)}
    fields = HfArgumentParser((TrainJob, TAGRPOConfig), add_help=False)
    for group in fields._action_groups:
        for action in group._group_actions:
            action.default, action.required = argparse.SUPPRESS, False  # unset flags leave YAML and defaults alone
            if action.dest in modes:
                action.choices = list(modes[action.dest])  # argparse lists them: --anchor {original,none,...}
    return fields


def _train_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help="flat YAML file of job and trainer keys")
    parser.add_argument("overrides", nargs="*", metavar="key=value", help="overrides, parsed as YAML scalars")


def _train(args) -> None:
    from tagrpo.trainer.run import known_keys, load_config, run_train, split_config

    values = load_config(args.config, args.overrides)
    values.update({k: v for k, v in vars(args).items() if k in known_keys()})
    run_train(*split_config(values))


def _demo_arguments(parser) -> None:
    from tagrpo.cliargs import add_dataclass_arguments
    from tagrpo.toy.demo import PRESETS, DemoConfig

    add_dataclass_arguments(parser, DemoConfig, choices={"preset": tuple(PRESETS)})
    parser.add_argument("--quick", action="store_true", help="the CI smoke preset (the same as --preset quick)")


def _demo(args) -> None:
    from tagrpo.cliargs import dataclass_values
    from tagrpo.toy.demo import DemoConfig, run_demo

    values = dataclass_values(args, DemoConfig)
    if args.quick:
        values["preset"] = "quick"
    run_demo(DemoConfig(**values))


def _eval_arguments(parser) -> None:
    from tagrpo.cliargs import add_dataclass_arguments
    from tagrpo.data.prompts import TEMPLATES
    from tagrpo.evaluation.engines import ENGINES
    from tagrpo.evaluation.run import EvalConfig

    add_dataclass_arguments(parser, EvalConfig, choices={"engine": ENGINES, "template": tuple(TEMPLATES)})
    parser.add_argument("--compare", nargs="+", metavar="RUN", help="eval output directories to put side by side")


def _eval(args) -> None:
    from tagrpo.cliargs import dataclass_values
    from tagrpo.evaluation.report import compare_runs
    from tagrpo.evaluation.run import EvalConfig, run_eval

    values = dataclass_values(args, EvalConfig)
    if values.get("model"):
        run_eval(EvalConfig(**values))
        if args.compare:
            compare_runs([*args.compare, values.get("output_dir", "outputs/eval")], values.get("output_dir"))
    elif args.compare:
        compare_runs(args.compare, values.get("output_dir"))
    else:
        raise TagrpoError("give --model to evaluate, or --compare RUN [RUN ...] to compare finished runs")


def _rephrase_arguments(parser) -> None:
    from tagrpo.rephrase.run import add_arguments

    add_arguments(parser)


def _rephrase(args) -> None:
    from tagrpo.rephrase.run import config_from_args, run_rephrase

    run_rephrase(config_from_args(args))


def _toy_arguments(parser) -> None:
    from tagrpo.cliargs import add_dataclass_arguments
    from tagrpo.toy.pretrain import PretrainConfig

    toy = parser.add_subparsers(dest="toy_command", required=True)
    pre = toy.add_parser("pretrain", help="pretrain (or reuse) the embedded world's base model")
    add_dataclass_arguments(pre, PretrainConfig)


def _toy(args) -> None:
    from tagrpo.cliargs import dataclass_values
    from tagrpo.toy.pretrain import PretrainConfig, pretrain_base

    pretrain_base(PretrainConfig(**dataclass_values(args, PretrainConfig)))


def _models_arguments(parser) -> None:
    msub = parser.add_subparsers(dest="models_command", required=True)
    fetch = msub.add_parser("fetch", help="download, check and convert a model once; print its directory")
    fetch.add_argument("name", help="a name of `tagrpo models list`, e.g. smollm2-135m")
    fetch.add_argument("--cache-dir", help="default: $TAGRPO_CACHE/models or ~/.cache/tagrpo/models")
    msub.add_parser("list", help="the models `tagrpo models fetch` knows")


def _models(args) -> None:
    from tagrpo.models import MODELS, fetch_model

    if args.models_command == "list":
        for name, spec in MODELS.items():
            print(f"{name}: {spec.description} ({spec.package}=={spec.version})")
        return
    print(fetch_model(args.name, args.cache_dir, log=lambda line: print(line, file=sys.stderr)))


COMMANDS = {  # name: (help, add its arguments, run it)
    "train": ("train with TA-GRPO or a baseline (TRL, accelerate)", _train_arguments, _train),
    "demo": ("GRPO, augmentation, equal-sampling and TA-GRPO on the embedded world, on CPU", _demo_arguments, _demo),
    "rephrase": ("verified, cached rephrasings from an OpenAI-compatible model", _rephrase_arguments, _rephrase),
    "eval": ("unbiased pass@k and diversity on math benchmarks (resumable)", _eval_arguments, _eval),
    "toy": ("the embedded world's tools", _toy_arguments, _toy),
    "models": ("real pretrained models from the package index (no model hub)", _models_arguments, _models),
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser, with the arguments of ``command`` only (the others list their help line)."""
    parser = argparse.ArgumentParser(prog="tagrpo", description="Transformation-Augmented GRPO on TRL")
    parser.add_argument("--version", action="version", version=f"tagrpo {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (text, add_arguments, run) in COMMANDS.items():
        extra = {}
        if name == "train" and command == "train":
            extra = {"epilog": TRAIN_EPILOG, "formatter_class": argparse.RawDescriptionHelpFormatter,
                     "parents": [_train_fields()]}
        p = sub.add_parser(name, help=text, description=text, **extra)
        if name == command:
            add_arguments(p)
        p.set_defaults(func=run)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    command = next((a for a in argv if not a.startswith("-")), None)
    if command == "demo" and not {"-h", "--help"} & set(argv):  # the main job says something from its first second
        print("tagrpo demo: loading torch, transformers and TRL ...", file=sys.stderr, flush=True)
    args = build_parser(command).parse_args(argv)
    try:
        args.func(args)
    except (TagrpoError, FileNotFoundError) as err:
        print(f"tagrpo {args.command}: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
