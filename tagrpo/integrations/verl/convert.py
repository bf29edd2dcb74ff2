"""Convert rephrased questions (``{id, prompt, answer, rephrasings}``) or a benchmark to verl's parquet format.

One parquet row per original question, the columns verl's ``RLHFDataset`` and reward loop read:

- ``prompt``: q0 as a chat list ``[{"role": "user", "content": <template(q0)>}]`` (the paper's template by default;
  verl applies the model's chat template);
- ``data_source``: ``tagrpo/math`` (``tagrpo/choice`` for a multiple-choice benchmark), read by the reward;
- ``ability``: ``math``;  ``reward_model``: ``{"style": "rule", "ground_truth": <answer as text>}``;
- ``extra_info``: ``{"index": row number, "original_id": id as text, "split": ..., "rephrasings": [chat lists]}``.

The rephrasings stay inside their question's row: the TA-GRPO trainer expands each sampled question into its
N+1 prompts inside the step, so pools are whole whatever the data loader's order.

    python -m tagrpo.integrations.verl.convert rephrased.jsonl data/verl/math_train.parquet --num-rephrasings 3
    python -m tagrpo.integrations.verl.convert --benchmark math500 data/verl/math500.parquet
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tagrpo.data.prompts import TEMPLATES, format_prompt
from tagrpo.data.short import SHORT_RULES, fit_rephrasings

DATA_SOURCE = "tagrpo/math"
CHOICE_SOURCE = "tagrpo/choice"
PLAIN_CHAT_TEMPLATE = "{% for message in messages %}{{ message['content'] }}{% endfor %}"  # examples/verl


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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tagrpo.integrations.verl.convert", description=__doc__.split("\n")[0]
    )
    parser.add_argument("input", nargs="?", help="rephrased questions: jsonl / json / parquet file or hub id")
    parser.add_argument("output", help="parquet file to write")
    parser.add_argument("--benchmark", help="convert this evaluation benchmark (e.g. math500) instead of INPUT")
    parser.add_argument("--data-dir", help="benchmark folder (default: tagrpo.data.default_data_dir())")
    parser.add_argument("--limit", type=int, help="keep the first K benchmark questions")
    parser.add_argument("--template", default="paper", choices=sorted(TEMPLATES))
    parser.add_argument("--split", default="train")
    parser.add_argument("--num-rephrasings", type=int, help="give every row exactly N rephrasings first")
    parser.add_argument("--short-rephrasings", "--policy", dest="short", default="fill_original", choices=SHORT_RULES,
                        help="for rows with fewer than N (--policy: the old name)")
    parser.add_argument("--tokenizer", help="model or tokenizer folder: drop rephrasings longer than the limit")
    parser.add_argument("--max-prompt-length", type=int, default=512, help="tokens (data.max_prompt_length)")
    parser.add_argument(
        "--chat-template",
        default=PLAIN_CHAT_TEMPLATE,
        help="template the run uses (default: the examples' plain one; 'model': the tokenizer's)",
    )
    for name in ("id", "prompt", "answer", "rephrasings"):
        parser.add_argument(f"--{name}-field", default=name, help=f"source column of {name!r}")
    args = parser.parse_args(argv)
    if args.benchmark:
        rows, counts = to_verl_rows(
            benchmark_rows(args.benchmark, args.data_dir, args.limit), args.template, split=args.benchmark
        )
        write_parquet(rows, args.output)
    elif args.input:
        fields = {f"{n}_field": getattr(args, f"{n}_field") for n in ("id", "prompt", "answer", "rephrasings")}
        chat_template = None if args.chat_template == "model" else args.chat_template
        counts = convert(
            args.input,
            args.output,
            template=args.template,
            split=args.split,
            num_rephrasings=args.num_rephrasings,
            short=args.short,
            length=tokenizer_length(args.tokenizer, chat_template) if args.tokenizer else None,
            max_prompt_length=args.max_prompt_length,
            **fields,
        )
    else:
        parser.error("give INPUT or --benchmark NAME")
    print(f"wrote {args.output}: " + ", ".join(f"{k}={v}" for k, v in counts.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
