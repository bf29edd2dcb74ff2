"""``tagrpo eval``: unbiased pass@k per benchmark and averaged, resumable, with diversity diagnostics.

Per benchmark, ``output_dir/<benchmark>/counts.jsonl`` receives one line per finished question (``id``, ``n``,
``correct``, diversity numbers), appended and flushed chunk by chunk: a crash loses at most the chunk in flight,
a torn last line is dropped, and a rerun skips the questions already there. pass@k is recomputed from that file.
``fingerprint.json`` beside it records the model and the sampling settings: a run with other ones refuses the
directory (``--overwrite`` starts again), and every question samples with a seed of its own id.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field

import numpy as np
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from tagrpo.common.errors import InputError
from tagrpo.common.fields import helped
from tagrpo.data.jsonl import append_jsonl, read_jsonl
from tagrpo.data.prompts import TEMPLATES, render_prompt
from tagrpo.evaluation.fingerprint import claim, fingerprint, question_seed
from tagrpo.models import check_model, resolve_model


@dataclass
class EvalConfig:
    """Settings of ``tagrpo eval``."""

    model: str = field(metadata={"help": "model directory, hub id, or a shipped toy model (toy_world, toy_regime) to "
                                 "evaluate"})
    benchmarks: str = helped(
        "aime24,aime25,amc23,olympiadbench,minerva,math500",
        "comma-separated: math_train, math500, aime24, aime25, amc23, olympiadbench, minerva, gpqa_diamond, toy_world",
    )
    output_dir: str = helped("outputs/eval", "counts, fingerprints, report.md, report.json and pass_at_k.png")
    data_dir: str | None = helped(None, "benchmark files (default: $TAGRPO_DATA_DIR, else ../shared/data when present)")
    n: int = helped(32, "samples per question")
    k: str = helped("1,2,4,8,16,32", "comma-separated k of pass@k, each at most n")
    temperature: float = helped(0.6, "sampling temperature (0: greedy)")
    top_p: float = helped(0.95, "nucleus sampling")
    max_new_tokens: int = helped(3072, "tokens per response")
    template: str = helped("paper", "paper (the paper's instruction), plain (the question), fewshot or oneshot "
                           "(two worked sums first, or one), twostep or threesum (one worked two-step example)")
    chat_template: bool = helped(False, "wrap the prompt in the tokenizer's chat template")
    system_prompt: str | None = helped(None, "with --chat-template, a system message before the question ('' an "
                                       "empty one); unset: the chat template's own default")
    engine: str = helped("auto", "vLLM when installed and a GPU is present, else transformers")
    batch_size: int = helped(256, "rows per transformers generate call")
    chunk_questions: int = helped(16, "questions per written chunk of counts.jsonl")
    limit: int | None = helped(None, "only the first LIMIT questions of each benchmark")
    seed: int = helped(0, "sampling seed (each question draws from a seed of its own id)")
    embedder: str = helped("none", "response embeddings for diversity: none, minilm (offline) or a model path")
    overwrite: bool = helped(False, "start again where the output directory holds another run's counts")

    def __post_init__(self):
        from tagrpo.common.modes import check_mode
        from tagrpo.data.benchmarks import benchmark_names
        from tagrpo.evaluation.engines import ENGINES

        self.model = resolve_model(self.model)
        check_mode("template", self.template, tuple(TEMPLATES))
        check_mode("engine", self.engine, ENGINES)
        for name in self.benchmark_list:
            check_mode("benchmark", name, benchmark_names())
        for flag in ("n", "max_new_tokens", "batch_size", "chunk_questions", "limit"):
            value = getattr(self, flag)
            if value is not None and value < 1:
                raise InputError(f"--{flag.replace('_', '-')} {value}: must be at least 1")
        _ = self.ks

    @property
    def ks(self) -> list[int]:
        parts = [k.strip() for k in str(self.k).split(",") if k.strip()]
        bad = [k for k in parts if not k.isdigit()]
        if bad or not parts:
            raise InputError(f"--k {self.k!r}: expected comma-separated whole numbers such as 1,2,4,8")
        ks = sorted({int(k) for k in parts})
        if ks[0] < 1 or ks[-1] > self.n:
            raise InputError(f"--k {self.k!r}: every k must be between 1 and n={self.n}")
        return ks

    @property
    def benchmark_list(self) -> list[str]:
        return [b.strip() for b in self.benchmarks.split(",") if b.strip()]


def load_eval_rows(name: str, data_dir: str | None, limit: int | None) -> list[dict]:
    """Rows ``{id, question, answer, reward}`` of a benchmark (a file-backed one, or a registered one such as
    ``toy_world``)."""
    from tagrpo.data.benchmarks import load_benchmark

    return load_benchmark(name, data_dir=data_dir, limit=limit)


def _diversity(responses: list[str], correct: list[bool], embedder) -> dict:
    from tagrpo.evaluation.diversity import distinct_ngrams, mean_pairwise_cosine_distance  # torch: not for --help

    out = {"lexical_diversity": distinct_ngrams(responses, 2, "word")}
    if embedder is not None and responses:
        emb = embedder(responses)  # (S, D)
        out["embed_diversity"] = mean_pairwise_cosine_distance(emb)
        keep = [i for i, c in enumerate(correct) if c]
        out["embed_diversity_correct"] = mean_pairwise_cosine_distance(emb[keep]) if len(keep) > 1 else None
    return out


def evaluate_benchmark(name: str, cfg: EvalConfig, engine, embedder, console: Console) -> dict:
    from tagrpo.rewards import get_reward_check

    rows = load_eval_rows(name, cfg.data_dir, cfg.limit)
    directory = os.path.join(cfg.output_dir, name)
    path = os.path.join(directory, "counts.jsonl")
    if cfg.overwrite:
        for stale in (path, os.path.join(directory, "fingerprint.json")):
            if os.path.exists(stale):
                os.remove(stale)
    done = {r["id"]: r for r in read_jsonl(path, repair=True)}
    claim(directory, fingerprint(cfg, name), has_counts=bool(done))
    todo = [r for r in rows if str(r["id"]) not in done]
    if done:
        console.print(f"{name}: resuming, {len(done)} of {len(rows)} questions already done")
    with Progress(
        TextColumn(f"[bold]{name}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as bar:
        task = bar.add_task(name, total=len(rows), completed=len(rows) - len(todo))
        for start in range(0, len(todo), cfg.chunk_questions):
            chunk = todo[start : start + cfg.chunk_questions]
            prompts = [render_prompt(r["question"], engine.tokenizer, cfg.template, cfg.chat_template,
                                     cfg.system_prompt) for r in chunk]
            seeds = [question_seed(cfg.seed, r["id"]) for r in chunk]
            responses = engine.generate(prompts, cfg.n, cfg.temperature, cfg.top_p, cfg.max_new_tokens, seeds)
            lines = []
            for row, texts in zip(chunk, responses, strict=True):
                check = get_reward_check(row.get("reward", "math"))
                correct = [check(t, row["answer"]) for t in texts]
                lines.append(
                    {
                        "id": str(row["id"]),
                        "n": len(texts),
                        "correct": int(sum(correct)),
                        **_diversity(texts, correct, embedder),
                    }
                )
            append_jsonl(path, lines)
            done.update({line["id"]: line for line in lines})
            bar.update(task, advance=len(chunk))
    records = [done[str(r["id"])] for r in rows]
    return summarize_counts(records, cfg.ks)


def summarize_counts(records: list[dict], ks: list[int]) -> dict:
    """pass@k (mean over questions) and mean diversity from per-question count records."""
    from tagrpo.evaluation.sampling import pass_at_k_curve  # torch (tagrpo.core): not for --help

    n = np.array([r["n"] for r in records])
    c = np.array([r["correct"] for r in records])
    out = {"questions": len(records), "samples_per_question": int(n.min()) if len(n) else 0}
    out["pass_at_k"] = pass_at_k_curve(c, n, ks)
    for key in ("lexical_diversity", "embed_diversity", "embed_diversity_correct"):
        values = [r[key] for r in records if r.get(key) is not None]
        if values:
            out[key] = float(np.mean(values))
    return out


def run_eval(cfg: EvalConfig, console: Console | None = None) -> dict:
    from tagrpo.evaluation.engines import make_engine
    from tagrpo.evaluation.report import write_eval_report

    console = console or Console()
    check_model(cfg.model)
    os.makedirs(cfg.output_dir, exist_ok=True)
    engine = make_engine(cfg.engine, cfg.model, batch_size=cfg.batch_size)
    embedder = None
    if cfg.embedder != "none":
        from tagrpo.evaluation.embed import Embedder

        embedder = Embedder(cfg.embedder)
    results = {name: evaluate_benchmark(name, cfg, engine, embedder, console) for name in cfg.benchmark_list}
    average = {
        str(k): float(np.mean([r["pass_at_k"][str(k)] for r in results.values()]))
        for k in cfg.ks
        if all(str(k) in r["pass_at_k"] for r in results.values())
    }
    report = {"config": asdict(cfg), "benchmarks": results, "average": {"pass_at_k": average}}
    with open(os.path.join(cfg.output_dir, "report.json"), "w", encoding="utf-8") as f:
        json.dump(report, f, indent=2)
    write_eval_report(cfg.output_dir, report, console)
    return report
