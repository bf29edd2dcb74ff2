"""The ``tagrpo`` command: parse -> config -> call."""

from __future__ import annotations

import argparse
import dataclasses
import logging
import sys


def _train(args) -> None:
    from tagrpo.trainer.run import load_config, run_train, split_config

    job, config = split_config(load_config(args.config, args.overrides))
    run_train(job, config)


def _demo(args) -> None:
    from tagrpo.toy.demo import DemoConfig, run_demo

    values = {k: v for k, v in vars(args).items() if k in {f.name for f in dataclasses.fields(DemoConfig)}}
    run_demo(DemoConfig(**{k: v for k, v in values.items() if v is not None}))


def _train_help() -> str:
    from tagrpo.trainer.run import TrainJob

    lines = [f"  {f.name}: {f.metadata.get('help', '')}" for f in dataclasses.fields(TrainJob)]
    return (
        "job keys:\n" + "\n".join(lines) + "\nevery other key is a TAGRPOConfig / TRL GRPOConfig field, e.g. "
        "num_rephrasings=3 anchor=original advantage_scope=pool num_generations=8 learning_rate=1e-6"
    )


def build_parser() -> argparse.ArgumentParser:
    from tagrpo.toy.demo import DemoConfig

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
    demo = sub.add_parser("demo", help="the embedded arithmetic world on CPU, end to end")
    for f in dataclasses.fields(DemoConfig):
        if f.type in ("bool", bool):
            demo.add_argument(f"--{f.name.replace('_', '-')}", dest=f.name, action="store_true")
        else:
            demo.add_argument(
                f"--{f.name.replace('_', '-')}",
                dest=f.name,
                type=type(f.default),
                help=f"default {f.default}",
            )
    demo.set_defaults(func=_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    args = build_parser().parse_args(argv)
    try:
        args.func(args)
    except (ValueError, FileNotFoundError) as err:
        print(f"tagrpo {args.command}: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
