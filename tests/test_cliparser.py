"""``tagrpo.common.parser.CommandParser``: the flags a dataclass gives every ``tagrpo`` command."""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import MISSING, dataclass

import pytest

from tagrpo.common.fields import helped
from tagrpo.common.parser import CommandParser, given_flags, parse_dataclasses


@dataclass(kw_only=True)
class Job:
    source: str | None = helped(None, "where the rows come from", positional=True)
    target: str = helped(MISSING, "where they go", positional=True)
    mode: str = helped("fast", "how to go")
    steps: int = helped(3, "how many steps")
    verbose: bool = helped(False, "say more")
    tidy: bool = helped(True, "clean up afterwards")
    mix: dict = dataclasses.field(default_factory=lambda: {"a": 1.0}, metadata={"help": "shares, as JSON"})
    cache_dir: str | None = helped(None, "default: the user's cache")


def parser(**kwargs) -> CommandParser:
    return CommandParser((Job,), {"mode": ("fast", "slow")}, prog="tagrpo job", **kwargs)


def test_flags_positionals_booleans_and_json():
    (job,) = parse_dataclasses(parser(), ["in.jsonl", "out.parquet", "--steps", "5", "--mode", "slow",
                                          "--verbose", "--no-tidy", "--mix", '{"b": 2}', "--cache-dir", "c"])
    assert job == Job(source="in.jsonl", target="out.parquet", mode="slow", steps=5, verbose=True, tidy=False,
                      mix={"b": 2}, cache_dir="c")
    (job,) = parse_dataclasses(parser(), ["out.parquet", "--verbose", "false", "--no_verbose", "--tidy"])
    assert (job.source, job.target, job.verbose, job.tidy, job.mix) == (None, "out.parquet", False, True, {"a": 1.0})
    (job,) = parse_dataclasses(parser(), ["out.parquet", "--verbose", "--no-verbose"])
    assert job.verbose is False  # the last of the pair wins


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["out", "--mode", "fats"], "argument --mode: invalid choice: 'fats' (choose from 'fast', 'slow')"),
        (["out", "--bogus"], "unrecognized arguments: --bogus"),
        (["a", "b", "c"], "unrecognized arguments: c"),
        ([], "the following arguments are required: target"),
    ],
)
def test_bad_input_is_a_usage_error(argv, message, capsys):
    with pytest.raises(SystemExit) as info:
        parse_dataclasses(parser(), argv)
    assert info.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == f"tagrpo job: error: {message}"


def test_help_lists_choices_defaults_and_negations(capsys):
    with pytest.raises(SystemExit):
        parser().parse_args(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "usage: tagrpo job [-h] [--mode {fast,slow}]" in text and "[source] target" in text
    assert "how to go; one of: fast, slow (default: fast)" in text
    assert "how many steps (default: 3)" in text and "where they go" in text and "where they go (" not in text
    assert '--mix MIX shares, as JSON (default: {"a": 1.0})' in text
    assert text.endswith("--cache_dir CACHE_DIR, --cache-dir CACHE_DIR default: the user's cache")  # no 2nd default
    assert "--no_verbose, --no-verbose verbose=False" in text and "--no_tidy, --no-tidy clean up afterwards" in text


def test_defaults_can_stay_out_of_the_help(capsys):
    with pytest.raises(SystemExit):
        parser(defaults_in_help=False).parse_args(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "how many steps --" in text and "(default: 3)" not in text


def test_given_flags_are_only_those_on_the_line():
    p = parser()
    p.add_argument("--extra", help="not a field")
    assert given_flags(p, ["--steps", "7", "--no-tidy"]) == {"steps": 7, "tidy": False, "extra": None}
    assert given_flags(parser(), []) == {}  # the required positional too is left to the caller


def test_other_arguments_stay_as_given():
    p = parser()
    p.add_argument("--quick", action="store_const", const="slow", dest="mode", default=argparse.SUPPRESS)
    (job,) = parse_dataclasses(p, ["out", "--quick"])
    assert job.mode == "slow" and job.steps == 3
