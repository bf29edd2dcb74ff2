"""``tagrpo probe``: before training, where a model and a rephrased data set sit on TA-GRPO's regime map.

Draws ``--questions`` rows of the data (a seeded shuffle, so a larger probe extends a smaller one), samples ``n``
responses of the base model to q0 and to each rephrasing, scores them with the training reward, and summarises
the counts with :mod:`tagrpo.evaluation.probe_math`; :mod:`tagrpo.evaluation.probe_report` places the result on the
committed regime map and writes ``probe.json``, ``probe.md`` and ``probe.png``.

``output_dir/counts.jsonl`` receives one line per finished question (``id``, ``n``, ``q0``, ``rephrasings``,
``types``), chunk by chunk, as ``tagrpo eval``'s counts do: an interrupted probe resumes. ``fingerprint.json``
records the model, the data (name, options and a hash of its rows), the reward and the sampling settings; a probe
with other ones refuses the directory, naming what differs (``--overwrite`` starts again).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import time
from dataclasses import MISSING, asdict, dataclass

from rich.console import Console

from tagrpo.common.errors import InputError
from tagrpo.common.fields import helped
from tagrpo.data.jsonl import append_jsonl, read_jsonl
from tagrpo.data.prompts import TEMPLATES, render_prompt
from tagrpo.evaluation.fingerprint import claim, model_hash, question_seed
from tagrpo.models import check_model, resolve_model

FIELDS = ("model", "model_hash", "data", "data_hash", "hard_share", "reward", "n", "temperature", "top_p",
          "max_new_tokens", "template", "chat_template", "system_prompt", "seed", "sampling")
SAMPLING = "per-question"  # one generate call per question (q0 and its rephrasings), seeded by the question's id


@dataclass
class ProbeConfig:
    """Settings of ``tagrpo probe``."""

    model: str = helped(MISSING, "base model directory, hub id, or a shipped toy model: toy_world, toy_regime")
    data: str = helped(MISSING, "rephrased data (a .jsonl/.json/.parquet file, a saved data set, a hub id) or a "
                                "built-in one: toy_world, toy_regime")
    hard_share: float | None = helped(None, "toy_regime: the share of hard questions (default 0.6)")
    n: int = helped(8, "samples of q0 and of each rephrasing per question (at least 2)")
    questions: int = helped(200, "questions drawn from the data (seeded; all of them when it has fewer)")
    output_dir: str = helped("outputs/probe", "counts, fingerprint, probe.json, probe.md and probe.png")
    reward: str = helped("math", "the training reward: math, choice or boxed_or_last_number")
    num_rephrasings: int = helped(3, "N of the training run the probe prices (rephrasings per question)")
    num_generations: int = helped(8, "G of the training run the probe prices (samples per variant)")
    temperature: float = helped(1.0, "sampling temperature (training's rollouts: 1.0)")
    top_p: float = helped(1.0, "nucleus sampling")
    max_new_tokens: int | None = helped(None, "tokens per response (default 1024; toy_world 28, toy_regime 36)")
    template: str | None = helped(None, "paper, plain, fewshot, oneshot, twostep or threesum (default paper; "
                                  "the toy worlds: plain)")
    chat_template: bool = helped(False, "wrap the prompt in the tokenizer's chat template")
    system_prompt: str | None = helped(None, "with --chat-template, a system message before the question")
    engine: str = helped("auto", "vLLM when installed and a GPU is present, else transformers")
    batch_size: int = helped(256, "rows per transformers generate call")
    chunk_questions: int = helped(8, "questions per written chunk of counts.jsonl")
    seed: int = helped(0, "seed of the draw and of the sampling (each variant draws from a seed of its own id)")
    split: str = helped("train", "split of a hub or saved data set")
    id_field: str = helped("id", "source field holding the question id")
    prompt_field: str = helped("prompt", "source field holding q0")
    answer_field: str = helped("answer", "source field holding the reference answer")
    rephrasings_field: str = helped("rephrasings", "source field holding the list of rephrasings")
    overwrite: bool = helped(False, "start again where the output directory holds another probe's counts")

    def __post_init__(self):
        from tagrpo.common.modes import check_mode
        from tagrpo.data.named import named_defaults
        from tagrpo.evaluation.engines import ENGINES
        from tagrpo.rewards import CHECKS

        self.model = resolve_model(self.model)
        defaults = named_defaults(self.data)  # a built-in data set's (the toy worlds': plain, their longest solution)
        self.template = self.template or defaults.get("template", "paper")
        self.max_new_tokens = self.max_new_tokens or defaults.get("max_new_tokens", 1024)
        check_mode("template", self.template, tuple(TEMPLATES))
        check_mode("engine", self.engine, ENGINES)
        check_mode("reward", self.reward, tuple(CHECKS))
        if self.n < 2:
            raise InputError(f"--n {self.n}: the probe needs at least 2 samples per variant to tell a mixed group "
                             "from a uniform one")
        for flag, value in (("questions", self.questions), ("num_generations", self.num_generations),
                            ("num_rephrasings", self.num_rephrasings), ("chunk_questions", self.chunk_questions)):
            if value < 1:
                raise InputError(f"--{flag} {value}: must be at least 1")


def _types(row: dict) -> list[str] | None:
    provenance = row.get("rephrasing_provenance")
    if isinstance(provenance, list) and len(provenance) == len(row["rephrasings"]):
        types = [p.get("type") if isinstance(p, dict) else None for p in provenance]
        if all(isinstance(t, str) and t for t in types):
            return types
    return None


def load_probe_rows(cfg: ProbeConfig) -> tuple[list[dict], int]:
    """The data's rows with rephrasings (each with ``types`` or None) and how many rows had none; a data set
    where no row has any is refused, naming the field and the first row."""
    from tagrpo.data.named import is_named, load_named

    if is_named(cfg.data):
        rows, field = load_named(cfg.data, hard_share=cfg.hard_share), "rephrasings"
    else:
        if cfg.hard_share is not None:
            raise InputError(f"--hard-share applies to the built-in data set toy_regime, not to {cfg.data!r}")
        from tagrpo.data import load_questions

        rows = load_questions(cfg.data, split=cfg.split, id_field=cfg.id_field, prompt_field=cfg.prompt_field,
                              answer_field=cfg.answer_field, rephrasings_field=cfg.rephrasings_field)
        field = cfg.rephrasings_field
    kept = [{**r, "id": str(r["id"]), "types": _types(r)} for r in rows if r["rephrasings"]]
    if not kept:
        first = rows[0] if rows else {}
        raise InputError(f"{cfg.data}: row 1 (id {first.get('id')!r}) has no rephrasings in field {field!r}, nor "
                         "does any other row: the probe compares q0 with its rephrasings (make them with tagrpo "
                         "rephrase, or name the field with --rephrasings-field)")
    return kept, len(rows) - len(kept)


def draw(rows: list[dict], count: int, seed: int) -> list[dict]:
    """``count`` rows in a seeded order (the first k of a larger draw are the draw of k)."""
    order = list(range(len(rows)))
    random.Random(seed).shuffle(order)
    return [rows[i] for i in order[:count]]


def data_hash(rows: list[dict]) -> str:
    digest = hashlib.sha256()
    for r in rows:
        digest.update(json.dumps([r["id"], r["prompt"], str(r["answer"]), r["rephrasings"]]).encode())
    return digest.hexdigest()[:16]


def probe_fingerprint(cfg: ProbeConfig, rows: list[dict]) -> dict:
    model = os.path.abspath(cfg.model) if os.path.isdir(cfg.model) else cfg.model
    return {"model": model, "model_hash": model_hash(cfg.model), "data": cfg.data, "data_hash": data_hash(rows),
            "sampling": SAMPLING,
            **{k: getattr(cfg, k) for k in FIELDS if k not in ("model", "model_hash", "data", "data_hash", "sampling")}}


def sample_counts(chunk: list[dict], cfg: ProbeConfig, engine) -> list[dict]:
    """One counts record per question of ``chunk``: correct of ``n`` on q0 and on each rephrasing."""
    from tagrpo.rewards import get_reward_check

    check = get_reward_check(cfg.reward)
    texts = [[r["prompt"], *r["rephrasings"]] for r in chunk]  # per question, (V,)
    prompts = [render_prompt(t, engine.tokenizer, cfg.template, cfg.chat_template, cfg.system_prompt)
               for ts in texts for t in ts]
    prompts = iter(prompts)
    records = []
    for r, ts in zip(chunk, texts, strict=True):  # one call per question: its samples depend on it alone
        mine = [next(prompts) for _ in ts]
        responses = engine.generate_together(mine, cfg.n, cfg.temperature, cfg.top_p, cfg.max_new_tokens,
                                             question_seed(cfg.seed, r["id"]))
        correct = [sum(check(t, str(r["answer"])) for t in got) for got in responses]  # (V,)
        records.append({"id": r["id"], "n": cfg.n, "q0": int(correct[0]), "rephrasings": [int(c) for c in correct[1:]],
                        "types": r["types"]})
    return records


def run_probe(cfg: ProbeConfig, console: Console | None = None) -> dict:
    """Probe, resumably; write probe.json, probe.md and probe.png; return the summary."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from tagrpo.evaluation.probe_report import summarize, write_probe

    console = console or Console()
    start = time.perf_counter()
    check_model(cfg.model)
    rows, skipped = load_probe_rows(cfg)
    chosen = draw(rows, cfg.questions, cfg.seed)
    notes = []
    if skipped:
        notes.append(f"{skipped} rows without rephrasings were left out")
    if cfg.questions > len(rows):
        notes.append(f"--questions {cfg.questions} is more than the {len(rows)} rows with rephrasings: probing all")
    for note in notes:
        console.print(f"note: {note}")
    path = os.path.join(cfg.output_dir, "counts.jsonl")
    if cfg.overwrite:
        for stale in (path, os.path.join(cfg.output_dir, "fingerprint.json")):
            if os.path.exists(stale):
                os.remove(stale)
    done = {r["id"]: r for r in read_jsonl(path, repair=True)}
    claim(cfg.output_dir, probe_fingerprint(cfg, rows), has_counts=bool(done), fields=FIELDS)
    todo = [r for r in chosen if r["id"] not in done]
    console.print(f"probe: {len(chosen)} questions, {len(chosen) - len(todo)} cached, {len(todo)} to sample")
    if todo:
        from tagrpo.evaluation.engines import make_engine

        engine = make_engine(cfg.engine, cfg.model, batch_size=cfg.batch_size)
        columns = (TextColumn("[bold]probe"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        with Progress(*columns, console=console, transient=True) as bar:
            task = bar.add_task("probe", total=len(chosen), completed=len(chosen) - len(todo))
            for i in range(0, len(todo), cfg.chunk_questions):
                records = sample_counts(todo[i : i + cfg.chunk_questions], cfg, engine)
                append_jsonl(path, records)
                done.update({r["id"]: r for r in records})
                bar.update(task, advance=len(records))
    records = [done[r["id"]] for r in chosen]
    summary = summarize(records, cfg, rows=len(rows), notes=notes)
    summary.update(config=asdict(cfg), sampled=len(todo), wall_s=round(time.perf_counter() - start, 2))
    write_probe(cfg.output_dir, summary, records, console)
    return summary
