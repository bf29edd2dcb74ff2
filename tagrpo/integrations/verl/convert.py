"""Convert rephrased questions (``{id, prompt, answer, rephrasings}``) or a benchmark to verl's parquet format.

One parquet row per original question, the columns verl's ``RLHFDataset`` and reward loop read:

- ``prompt``: q0 as a chat list ``[{"role": "user", "content": <template(q0)>}]`` (the paper's template by default;
  verl applies the model's chat template);
- ``data_source``: ``tagrpo/math`` (``tagrpo/choice`` for a multiple-choice benchmark), read by the reward;
- ``ability``: ``math``;  ``reward_model``: ``{"style": "rule", "ground_truth": <answer as text>}``;
- ``extra_info``: ``{"index": row number, "original_id": id as text, "split": ..., "rephrasings": [chat lists]}``.

The rephrasings stay inside their question's row: the TA-GRPO trainer expands each sampled question into its
N+1 prompts inside the step, so pools are whole whatever the data loader's order.

    tagrpo verl convert rephrased.jsonl data/verl/math_train.parquet --num-rephrasings 3
    tagrpo verl convert --benchmark math500 data/verl/math500.parquet

``python -m tagrpo.integrations.verl.convert`` takes the same arguments (:class:`ConvertConfig`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import MISSING, dataclass
from typing import Any

from tagrpo.common.fields import helped
from tagrpo.data.prompts import TEMPLATES, format_prompt
from tagrpo.data.short import SHORT_RULES, fit_rephrasings

DATA_SOURCE = "tagrpo/math"
CHOICE_SOURCE = "tagrpo/choice"
PLAIN_CHAT_TEMPLATE = "{% for message in messages %}{{ message['content'] }}{% endfor %}"  # examples/verl


@dataclass(kw_only=True)
class ConvertConfig:
    """Settings of ``tagrpo verl convert``: INPUT (or ``--benchmark``) to the parquet file OUTPUT."""

    input: str | None = helped(None, "rephrased questions: jsonl / json / parquet file or hub id", positional=True)
    output: str = helped(MISSING, "parquet file to write", positional=True)
    benchmark: str | None = helped(None, "convert this evaluation benchmark (e.g. math500) instead of INPUT")
    data_dir: str | None = helped(None, "benchmark folder (default: tagrpo.data.default_data_dir())")
    limit: int | None = helped(None, "keep the first K benchmark questions")
    template: str = helped("paper", "prompt template of q0 and the rephrasings")
    split: str = helped("train", "split of the source, written into extra_info")
    num_rephrasings: int | None = helped(None, "give every row exactly N rephrasings first")
    short_rephrasings: str = helped("fill_original", "for rows with fewer than N")
    tokenizer: str | None = helped(None, "model or tokenizer folder: drop rephrasings longer than the limit")
    max_prompt_length: int = helped(512, "tokens (data.max_prompt_length)")
    chat_template: str = helped(
        PLAIN_CHAT_TEMPLATE, "template the run uses (default: the examples' plain one; 'model': the tokenizer's)"
    )
    id_field: str = helped("id", "source column of 'id'")
    prompt_field: str = helped("prompt", "source column of 'prompt'")
    answer_field: str = helped("answer", "source column of 'answer'")
    rephrasings_field: str = helped("rephrasings", "source column of 'rephrasings'")


def _chat(text: str, template: str) -> list[dict]:
    return format_prompt(text, template, chat=True)


def to_verl_rows(
    rows: Sequence[Mapping[str, Any]],
    template: str = "paper",
    data_source: str = DATA_SOURCE,
    split: str = "train",
    num_rephrasings: int | None = None,
    short: str = "fill_original",
) -> tuple[list[dict], dict[str, int]]:
    """verl rows for validated question rows; with ``num_rephrasings``, every row first gets exactly N rephrasings
    (``tagrpo.data.fit_rephrasings`` with ``short``; ``drop`` removes short rows). Returns ``(rows, counts)``."""
    counts = {"rows": len(rows)}
    if num_rephrasings is not None:
        rows, fit_counts = fit_rephrasings(rows, num_rephrasings, short)
        counts.update(fit_counts)
    out = []
    for index, row in enumerate(rows):
        source = row.get("data_source", data_source)
        out.append(
            {
                "data_source": source,
                "prompt": _chat(row["prompt"], template),
                "ability": "math",
                "reward_model": {"style": "rule", "ground_truth": str(row["answer"])},
                "extra_info": {
                    "index": index,
                    "original_id": str(row["id"]),
                    "split": split,
                    "rephrasings": [_chat(text, template) for text in row.get("rephrasings") or []],
                },
            }
        )
    counts["written"] = len(out)
    return out, counts


def drop_long_rephrasings(
    rows: list[dict], length: Callable[[list[dict]], int], max_prompt_length: int
) -> tuple[list[dict], int]:
    """Remove rephrasings whose prompt is longer than ``max_prompt_length`` (``length(chat) -> tokens``); the
    trainer pads a short list with q0 (``tagrpo.short_rephrasings``). verl checks q0 itself
    (``data.filter_overlong_prompts``). Returns ``(rows, rephrasings dropped)``."""
    dropped = 0
    for row in rows:
        info = row["extra_info"]
        kept = [chat for chat in info["rephrasings"] if length(chat) <= max_prompt_length]
        dropped += len(info["rephrasings"]) - len(kept)
        info["rephrasings"] = kept
    return rows, dropped


def tokenizer_length(path: str, chat_template: str | None = None) -> Callable[[list[dict]], int]:
    """Prompt length in tokens as verl's agent loop counts it: the tokenizer at ``path`` with its chat template
    (or ``chat_template``, as ``actor_rollout_ref.model.custom_chat_template`` sets it)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path)
    if chat_template:
        tokenizer.chat_template = chat_template

    def length(chat: list[dict]) -> int:
        text = tokenizer.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)
        return len(tokenizer(text, add_special_tokens=False)["input_ids"])

    return length


def benchmark_rows(name: str, data_dir: str | None = None, limit: int | None = None) -> list[dict]:
    """A benchmark of ``tagrpo.data.load_benchmark`` as question rows without rephrasings (for validation)."""
    from tagrpo.data.benchmarks import load_benchmark

    rows = []
    for row in load_benchmark(name, data_dir=data_dir, limit=limit):
        source = CHOICE_SOURCE if row.get("reward") == "choice" else DATA_SOURCE
        rows.append(
            {
                "id": row["id"],
                "prompt": row["question"],
                "answer": row["answer"],
                "rephrasings": [],
                "data_source": source,
            }
        )
    return rows


def write_parquet(rows: Sequence[Mapping[str, Any]], path: str | os.PathLike) -> str:
    """Write verl rows to ``path`` (parent folders created); returns the path."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not rows:
        raise ValueError("no rows to write")
    folder = os.path.dirname(os.fspath(path))
    if folder:
        os.makedirs(folder, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(list(rows)), path)
    return os.fspath(path)


def convert(
    source: Any,
    output: str | os.PathLike,
    *,
    template: str = "paper",
    split: str = "train",
    num_rephrasings: int | None = None,
    short: str = "fill_original",
    length: Callable[[list[dict]], int] | None = None,
    max_prompt_length: int = 512,
    **fields: str,
) -> dict[str, int]:
    """Load and validate ``source`` (``tagrpo.data.load_questions``: jsonl / json / parquet / hub id / rows, with
    ``id_field=...`` etc.), convert it and write ``output``; with ``length``, drop rephrasings longer than
    ``max_prompt_length`` (:func:`drop_long_rephrasings`). Returns the counts."""
    from tagrpo.data.loaders import load_questions

    rows = load_questions(source, split=split, **fields)
    verl_rows, counts = to_verl_rows(rows, template, DATA_SOURCE, split, num_rephrasings, short)
    if length is not None:
        verl_rows, counts["rephrasings_too_long"] = drop_long_rephrasings(verl_rows, length, max_prompt_length)
    write_parquet(verl_rows, output)
    return counts


def parse_convert(argv: Sequence[str] | None, prog: str, description: str) -> ConvertConfig:
    """:class:`ConvertConfig` from the command line ``argv`` (default: ``sys.argv[1:]``)."""
    import sys

    from tagrpo.common.parser import CommandParser, parse_dataclasses

    modes = {"template": sorted(TEMPLATES), "short_rephrasings": SHORT_RULES}
    parser = CommandParser((ConvertConfig,), modes, prog=prog, description=description)
    (cfg,) = parse_dataclasses(parser, sys.argv[1:] if argv is None else argv)
    if not (cfg.input or cfg.benchmark):
        parser.error("give INPUT or --benchmark NAME")
    return cfg


def run_convert(cfg: ConvertConfig) -> dict[str, int]:
    """Convert and write ``cfg.output``; prints and returns the counts."""
    if cfg.benchmark:
        rows, counts = to_verl_rows(
            benchmark_rows(cfg.benchmark, cfg.data_dir, cfg.limit), cfg.template, split=cfg.benchmark
        )
        write_parquet(rows, cfg.output)
    else:
        fields = {f"{n}_field": getattr(cfg, f"{n}_field") for n in ("id", "prompt", "answer", "rephrasings")}
        chat_template = None if cfg.chat_template == "model" else cfg.chat_template
        counts = convert(
            cfg.input,
            cfg.output,
            template=cfg.template,
            split=cfg.split,
            num_rephrasings=cfg.num_rephrasings,
            short=cfg.short_rephrasings,
            length=tokenizer_length(cfg.tokenizer, chat_template) if cfg.tokenizer else None,
            max_prompt_length=cfg.max_prompt_length,
            **fields,
        )
    print(f"wrote {cfg.output}: " + ", ".join(f"{k}={v}" for k, v in counts.items()))
    return counts


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m tagrpo.integrations.verl.convert``: the same as ``tagrpo verl convert``."""
    run_convert(parse_convert(argv, "python -m tagrpo.integrations.verl.convert", __doc__.split("\n")[0]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
