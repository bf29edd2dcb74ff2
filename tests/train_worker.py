"""``tagrpo train`` with a deterministic, mixed reward, in a process of its own (the resume tests kill it)."""

import sys
import zlib

import tagrpo.trainer.run as run
from tagrpo.cli import main


def parity_reward(completions, **kwargs):
    return [float(zlib.crc32(str(c).encode()) % 2) for c in completions]


if __name__ == "__main__":
    run.get_reward = lambda name: parity_reward
    sys.exit(main(["train", *sys.argv[1:]]))
