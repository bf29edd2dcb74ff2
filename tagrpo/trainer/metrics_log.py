"""Per-step metrics: one JSON line per log step in the output directory, and a compact rich console line."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from transformers import TrainerCallback

from tagrpo.data.jsonl import atomic_write

CONSOLE_KEYS = (
    ("loss", "loss"),
    ("reward", "reward"),
    ("tagrpo/pool/zero_std", "pool_uniform"),
    ("tagrpo/original/zero_std", "q0_uniform"),
    ("tagrpo/rescued", "rescued"),
    ("tagrpo/rollouts", "rollouts"),
    ("tagrpo/tokens_per_s", "tok/s"),
)


def _clean(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _step_of(line: str) -> int | None:
    try:
        return json.loads(line).get("step")
    except json.JSONDecodeError:  # a line torn by a crash
        return None


class MetricsLogger(TrainerCallback):
    """Append every log of the main process to ``output_dir/filename`` (flushed, so a crash loses nothing) and
    print a compact line of the TA-GRPO diagnostics every ``every``-th log (never for 0)."""

    def __init__(
        self, output_dir: str, filename: str = "metrics.jsonl", console: Console | None = None, every: int = 1
    ):
        self.path = os.path.join(output_dir, filename)
        self.console = console or Console(stderr=True)
        self.every, self.logged = every, 0

    def on_train_begin(self, args, state, control, **kwargs):
        """On a resume, drop the lines logged after the checkpoint's step: they are about to be logged again."""
        if not state.is_world_process_zero or state.global_step == 0 or not os.path.exists(self.path):
            return
        with open(self.path, encoding="utf-8") as f:
            lines = [line for line in f if line.strip()]
        kept = [line for line in lines if _step_of(line) is not None and _step_of(line) <= state.global_step]
        if len(kept) < len(lines):
            atomic_write(self.path, lambda tmp: Path(tmp).write_text("".join(kept), encoding="utf-8"))

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.is_world_process_zero or not logs:
            return
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        record = {"step": state.global_step, **{k: _clean(v) for k, v in logs.items()}}
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")
            f.flush()
        shown = [f"{label}={logs[key]:.4g}" for key, label in CONSOLE_KEYS if isinstance(logs.get(key), float | int)]
        self.logged += bool(shown)
        if shown and self.every and self.logged % self.every == 0:
            self.console.print(f"[bold]step {state.global_step}[/bold] " + "  ".join(shown))


class RichProgress(TrainerCallback):
    """A rich progress bar over the optimizer steps (replaces transformers' tqdm bar and its dict printing)."""

    def __init__(self, console: Console | None = None):
        self.console = console or Console(stderr=True)
        self.progress = None

    def on_train_begin(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            self.progress = Progress(
                TextColumn("[bold]training"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                console=self.console,
                transient=True,
            )
            self.progress.start()
            self.task = self.progress.add_task("train", total=state.max_steps)

    def on_step_end(self, args, state, control, **kwargs):
        if self.progress is not None:
            self.progress.update(self.task, completed=state.global_step)

    def on_train_end(self, args, state, control, **kwargs):
        if self.progress is not None:
            self.progress.stop()
            self.progress = None
