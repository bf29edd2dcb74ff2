"""One GPU: TA-GRPO (N=3, G=8) against TRL's GRPO (G=32) at equal completions, on a random Qwen3-1.7B config.

Both spend 32 completions per question on the same random-initialised checkpoint (bf16 on a GPU), the same rows,
batch, completion length (forced: ``min_new_tokens = max_completion_length``), seed and beta, with TRL's
transformers generation (no vLLM). Runs alternate (TA-GRPO, GRPO, ...); the first step of each run is warm-up.
Reports seconds per step, generated tokens per second and peak GPU memory of each, and their ratio.

On the H200 of the device tool (torch, transformers, accelerate installed; trl, datasets and their small
dependencies travel as wheels, see docs/gpu.md), within 8 minutes:

    python benchmarks/gpu_step.py --config qwen3-1.7b --out benchmarks/results

On a CPU it runs the same code on a tiny configuration (what the test suite checks):

    .venv/bin/python benchmarks/gpu_step.py --config tiny --steps 2 --out /tmp/gpu_step

Writes ``gpu_step.json`` and ``gpu_step.md`` into ``--out``.

``--runs`` picks what runs, in order, from ``timing`` (the comparison above, the default), ``server`` (two TA-GRPO
steps with TRL's vLLM server mode: ``trl vllm-serve`` on the last GPU, the trainer on the first) and ``zero3`` (two
TA-GRPO steps under ``accelerate launch --config_file configs/accelerate/zero3.yaml`` on every GPU). Each of the
last two reports whole pools, the loss on q0 and its step seconds, or ``skipped: <why>`` where a package it needs is
not installed (vllm; deepspeed) or, for ``server``, the machine has one GPU (NCCL refuses two ranks of the weight
sync on one device), or ``failed: <error>``; the script then exits 1:

    python benchmarks/gpu_step.py --config qwen3-1.7b --runs server,zero3 --steps 2 --out benchmarks/results
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402

from tagrpo.common.serving import free_port, wait_healthy  # noqa: E402
from tagrpo.trainer.timing import StepTimer, hash_reward, make_rows  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RUNS = ("timing", "server", "zero3")
G, N = 8, 3  # TA-GRPO's completions per prompt and rephrasings: pools of 32 rows
PROMPT = re.compile(r"Item (\d+) v(\d+):")

CONFIGS = {  # Qwen3-1.7B's shapes (its vocabulary too); "tiny" for CPUs and the tests
    "qwen3-1.7b": dict(hidden_size=2048, num_hidden_layers=28, num_attention_heads=16, num_key_value_heads=8,
                       intermediate_size=6144, head_dim=128, vocab_size=151936),
    "tiny": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                 intermediate_size=128, head_dim=16, vocab_size=512),
}


def padded_tokenizer(vocab_size: int):
    """The character tokenizer with dummy tokens up to ``vocab_size``, so that every sampled id decodes."""
    from tokenizers import Tokenizer, decoders
    from tokenizers.models import BPE
    from transformers import PreTrainedTokenizerFast

    from tagrpo.toy.tokenizer import CHARS, EOS, PAD, UNK

    names = [PAD, EOS, UNK, *dict.fromkeys(CHARS)]
    names += [f"<x{i}>" for i in range(vocab_size - len(names))]
    tok = Tokenizer(BPE(vocab={t: i for i, t in enumerate(names)}, merges=[], unk_token=UNK))
    tok.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token=PAD, eos_token=EOS, unk_token=UNK,
                                   padding_side="left")


def build_model(config: str, directory: str, dtype: torch.dtype) -> int:
    from transformers import AutoModelForCausalLM, Qwen3Config

    tok = padded_tokenizer(CONFIGS[config]["vocab_size"])
    cfg = Qwen3Config(**CONFIGS[config], max_position_embeddings=4096, tie_word_embeddings=config == "tiny",
                      pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id, bos_token_id=tok.eos_token_id)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(cfg, dtype=dtype)
    model.save_pretrained(directory)
    tok.save_pretrained(directory)
    return sum(p.numel() for p in model.parameters())


def common_args(args, on_gpu: bool) -> dict:
    return dict(per_device_train_batch_size=args.questions * 32, max_completion_length=args.length,
                max_steps=args.steps, seed=0, beta=0.0, learning_rate=1e-6, logging_steps=1, report_to=[],
                save_strategy="no", disable_tqdm=True, use_cpu=not on_gpu, bf16=on_gpu,
                generation_kwargs={"min_new_tokens": args.length})


def run_once(method: str, model_dir: str, args, on_gpu: bool) -> dict:
    from datasets import Dataset
    from transformers import AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from tagrpo.trainer import TAGRPOConfig, TAGRPOTrainer

    rows = make_rows(args.questions * args.steps, N)
    common = common_args(args, on_gpu)
    tok = AutoTokenizer.from_pretrained(model_dir)
    with tempfile.TemporaryDirectory() as out:
        if method == "tagrpo":
            config, cls = TAGRPOConfig(output_dir=out, num_rephrasings=N, num_generations=G, **common), TAGRPOTrainer
        else:
            config, cls = GRPOConfig(output_dir=out, num_generations=32, **common), GRPOTrainer
        trainer = cls(model_dir, [hash_reward], args=config, train_dataset=Dataset.from_list(rows),
                      processing_class=tok)
        timer = StepTimer()
        trainer.add_callback(timer)
        if on_gpu:
            torch.cuda.reset_peak_memory_stats()
        trainer.train()
    tokens = [h["completions/mean_length"] * args.questions * 32 for h in trainer.state.log_history
              if "completions/mean_length" in h]
    step_s = timer.steps[1:] or timer.steps
    return {"method": method, "step_s": timer.steps, "completion_tokens": tokens,
            "median_step_s": statistics.median(step_s),
            "tokens_per_s": statistics.median(t / s for t, s in zip(tokens[1:] or tokens, step_s, strict=False)),
            "peak_gpu_gib": torch.cuda.max_memory_allocated() / 2**30 if on_gpu else None}


# ---- the checks: TRL's vLLM server mode and DeepSpeed ZeRO-3 --------------------------------------------------------
def missing(*packages: str) -> str | None:
    """``skipped: <package> not installed`` for the first of ``packages`` that is not importable, else None."""
    absent = [p for p in packages if importlib.util.find_spec(p) is None]
    return f"skipped: {absent[0]} not installed" if absent else None


def variants_of(tok, ids, mask=None) -> list[tuple[int, int]]:
    """(question, variant) of each prompt row, read from its text ("Item 03 v2: ...")."""
    rows = []
    for r, row in enumerate(ids):
        row = torch.as_tensor(row)
        text = tok.decode(row[mask[r].bool()] if mask is not None else row)
        found = PROMPT.search(text)
        rows.append((int(found[1]), int(found[2])) if found else (-1, -1))
    return rows


def whole_pools(rows: list[tuple[int, int]]) -> bool:
    """Every pool of (N+1)*G consecutive rows: one question, variants 0..N in blocks of G."""
    pool = (N + 1) * G
    layout = [v for v in range(N + 1) for _ in range(G)]
    return len(rows) % pool == 0 and all(
        len({q for q, _ in rows[i : i + pool]}) == 1 and [v for _, v in rows[i : i + pool]] == layout
        for i in range(0, len(rows), pool))


def instrumented_trainer(model_dir: str, out: str, args, on_gpu: bool, **overrides):
    """A TA-GRPO trainer (N=3, G=8) and a record of what its steps generated and trained on."""
    from datasets import Dataset
    from transformers import AutoTokenizer

    from tagrpo.trainer import TAGRPOConfig, TAGRPOTrainer

    tok = AutoTokenizer.from_pretrained(model_dir)
    config = TAGRPOConfig(output_dir=out, num_rephrasings=N, num_generations=G,
                          **{**common_args(args, on_gpu), **overrides})
    trainer = TAGRPOTrainer(model_dir, [hash_reward], args=config,
                            train_dataset=Dataset.from_list(make_rows(args.questions * args.steps, N)),
                            processing_class=tok)
    record = {"generated": [], "trained": [], "timer": StepTimer()}
    trainer.add_callback(record["timer"])
    generate, loss = trainer._generate_single_turn, trainer._compute_loss

    def generate_spy(prompt_ids, *rest, **kwargs):
        record["generated"].append(variants_of(tok, prompt_ids))
        return generate(prompt_ids, *rest, **kwargs)

    def loss_spy(model, inputs):
        record["trained"] += [v for _, v in variants_of(tok, inputs["prompt_ids"], inputs["prompt_mask"])]
        return loss(model, inputs)

    trainer._generate_single_turn, trainer._compute_loss = generate_spy, loss_spy
    return trainer, tok, record


def step_checks(record: dict, steps: int) -> dict:
    """What must have happened in ``steps`` steps: one generation each, whole pools, the loss on q0 alone."""
    return {"one_generation_per_step": len(record["generated"]) == steps,
            "whole_pools": all(whole_pools(rows) for rows in record["generated"]),
            "loss_on_q0": set(record["trained"]) == {0}}


def outcome(checks: dict) -> str:
    failed = [name for name, ok in checks.items() if not ok]
    return f"failed: {', '.join(failed)}" if failed else "passed"


@contextmanager
def vllm_server(model_dir: str, work: Path, startup_s: float = 600.0):
    """``trl vllm-serve`` on the last GPU at a free port, its log in ``work``; stopped (its process group) on exit."""

    port, log_path = free_port(), work / "server.log"
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": str(torch.cuda.device_count() - 1)}
    cmd = [sys.executable, "-c", "from trl.cli import main; main()", "vllm-serve", "--model", model_dir, "--host",
           "127.0.0.1", "--port", str(port), "--gpu_memory_utilization", "0.5", "--max_model_len", "4096"]
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        if why := wait_healthy(f"http://127.0.0.1:{port}", proc, startup_s, poll_s=2):
            raise RuntimeError(f"trl vllm-serve {why}; log: {log_path}")
        yield f"http://127.0.0.1:{port}"
    finally:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(proc.pid, sig)  # the server's own group (start_new_session): its engine core too
                proc.wait(timeout=30)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                continue


def server_run(model_dir: str, args, on_gpu: bool) -> dict:
    """Two TA-GRPO steps with ``use_vllm=True, vllm_mode="server"``: each variant's prompt sent once with n=G, whole
    pools back, the loss on q0, one weight sync per step, and the engine's log-probs against the trainer's on the
    generating prompt (``engine_correction="generating"``: TRL's ``sampling/*`` metrics)."""
    skipped = missing("vllm", "requests")
    if skipped is None and torch.cuda.device_count() < 2:
        skipped = (f"skipped: needs 2 GPUs, found {torch.cuda.device_count()} (the server on its own GPU: NCCL refuses "
                   "two ranks of TRL's weight sync on one device)")
    if skipped:
        return {"run": "server", "status": skipped}
    with tempfile.TemporaryDirectory() as work:
        try:
            with vllm_server(model_dir, Path(work)) as base_url:
                trainer, tok, record = instrumented_trainer(
                    model_dir, work, args, on_gpu, use_vllm=True, vllm_mode="server", vllm_server_base_url=base_url,
                    anchor="original", engine_correction="generating", generation_kwargs={"min_tokens": args.length})
                requests, syncs = [], []
                client, sync = trainer.vllm_generation.vllm_client, trainer.vllm_generation.sync_weights
                ask = client.generate

                def generate_spy(**kwargs):
                    requests.append((kwargs["n"], [v for _, v in variants_of(tok, kwargs["prompts"])]))
                    return ask(**kwargs)

                client.generate = generate_spy
                trainer.vllm_generation.sync_weights = lambda: syncs.append(1) or sync()
                trainer.train()
        except Exception as error:  # the run's outcome, reported with the server's log
            log = (Path(work) / "server.log").read_text(errors="replace")[-3000:]
            return {"run": "server", "status": f"failed: {type(error).__name__}: {error}", "server_log": log}
    checks = {**step_checks(record, args.steps), "weight_sync_per_step": len(syncs) == args.steps,
              "variant_prompts_once_with_n_G": all(n == G and v == list(range(N + 1)) * args.questions
                                                   for n, v in requests)}
    sampling = {k: [h[k] for h in trainer.state.log_history if k in h]
                for k in sorted({k for h in trainer.state.log_history for k in h if k.startswith("sampling/")})}
    return {"run": "server", "status": outcome(checks), "checks": checks, "step_s": record["timer"].steps,
            "sampling": sampling, "peak_gpu_gib": torch.cuda.max_memory_allocated() / 2**30 if on_gpu else None}


def zero3_run(model_dir: str, args, on_gpu: bool) -> dict:
    """Two TA-GRPO steps under ``accelerate launch --config_file configs/accelerate/zero3.yaml`` on every GPU (one
    CPU process without one, with the CPU-only settings of tests/deepspeed_worker.py)."""
    skipped = missing("deepspeed")
    if skipped:
        return {"run": "zero3", "status": skipped}
    processes = max(torch.cuda.device_count(), 1)
    with tempfile.TemporaryDirectory() as work:
        cmd = [sys.executable, "-m", "accelerate.commands.launch", "--config_file",
               str(ROOT / "configs" / "accelerate" / "zero3.yaml"), "--num_processes", str(processes),
               "--main_process_port", str(free_port()), *([] if on_gpu else ["--mixed_precision", "no"]),
               __file__, "--worker", "zero3", "--model-dir", model_dir, "--config", args.config,
               "--steps", str(args.steps), "--questions", str(args.questions), "--length", str(args.length),
               "--out", work]
        env = {**os.environ, **({} if on_gpu else {"DS_ACCELERATOR": "cpu", "OMP_NUM_THREADS": "1"})}
        try:
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=args.run_timeout)
        except subprocess.TimeoutExpired:
            return {"run": "zero3", "status": f"failed: no exit within {args.run_timeout} s"}
        ranks = [json.loads(p.read_text()) for p in sorted(Path(work).glob("rank*.json"))]
    if proc.returncode != 0 or len(ranks) != processes:
        return {"run": "zero3", "status": f"failed: exit {proc.returncode}, {len(ranks)} of {processes} ranks "
                f"reported", "stderr": proc.stderr[-3000:]}
    checks = {k: all(r["checks"][k] for r in ranks) for k in ranks[0]["checks"]}
    return {"run": "zero3", "status": outcome(checks), "checks": checks, "processes": processes, "ranks": ranks,
            "step_s": ranks[0]["step_s"]}


def zero3_worker(args, on_gpu: bool) -> None:
    """One rank of ``zero3_run``: train, then write ``<out>/rank<k>.json`` (its checks, steps, ZeRO state)."""
    cpu_only = {} if on_gpu else dict(use_cpu=False, ddp_backend="gloo", bf16=False)
    trainer, _, record = instrumented_trainer(args.model_dir, str(args.out / "train"), args, on_gpu, **cpu_only)
    trainer.train()
    engine = trainer.model_wrapped
    params = list(engine.module.parameters())
    checks = {**step_checks(record, args.steps),
              "deepspeed_zero3": trainer.accelerator.distributed_type.value == "DEEPSPEED"
              and engine.zero_optimization_stage() == 3,
              "parameters_partitioned": all(hasattr(p, "ds_tensor") for p in params)}
    rank = trainer.accelerator.process_index
    (args.out / f"rank{rank}.json").write_text(json.dumps({
        "rank": rank, "checks": checks, "step_s": record["timer"].steps,
        "peak_gpu_gib": torch.cuda.max_memory_allocated() / 2**30 if on_gpu else None}))


CHECKS = {"server": server_run, "zero3": zero3_run}


def timing(model_dir: str, args, on_gpu: bool) -> dict:
    """TA-GRPO against GRPO: the untimed warm-up rounds, then the timed ones, and their medians."""
    # untimed: a process's first run on a GPU pays its one-off costs (kernel selection, the allocator's growth,
    # clocks) over more than one step, which the discarded first step of a timed run does not absorb
    warmup = [run_once(m, model_dir, args, on_gpu) for _ in range(args.warmup) for m in ("tagrpo", "grpo")]
    runs = []
    for _ in range(args.rounds):
        for m in ("tagrpo", "grpo"):
            runs.append(run_once(m, model_dir, args, on_gpu))
            # what has finished survives a run cut short (the device's time limit, a crash)
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / "gpu_step.partial.json").write_text(json.dumps(runs, indent=2))
    med = {}  # over every timed step of every round (each run's first step discarded)
    for m in ("tagrpo", "grpo"):
        mine = [r for r in runs if r["method"] == m]
        steps = [(t, s) for r in mine for t, s in zip(r["completion_tokens"][1:], r["step_s"][1:], strict=True)]
        med[m] = {"median_step_s": statistics.median(s for _, s in steps),
                  "tokens_per_s": statistics.median(t / s for t, s in steps)}
    return {"warmup_runs": warmup, "runs": runs, "median": med,
            "ratio_step_s": med["tagrpo"]["median_step_s"] / med["grpo"]["median_step_s"]}


def timing_lines(result: dict, args) -> list[str]:
    med, runs = result["median"], result["runs"]
    peak = {m: max((r["peak_gpu_gib"] or 0) for r in runs if r["method"] == m) for m in ("tagrpo", "grpo")}
    return [
        f"{args.questions} questions x 32 completions of {args.length} tokens per step, {args.steps} steps per run "
        f"(first discarded), {args.warmup} untimed and {args.rounds} timed round(s).",
        "",
        "| method | s / step | generated tokens / s | peak GPU GiB |",
        "|---|---|---|---|",
        *[f"| {name} | {med[m]['median_step_s']:.2f} | {med[m]['tokens_per_s']:.0f} | {peak[m]:.1f} |"
          for m, name in (("tagrpo", "TA-GRPO (N=3, G=8)"), ("grpo", "GRPO (G=32)"))],
        "",
        f"TA-GRPO / GRPO seconds per step: {result['ratio_step_s']:.3f}.",
        "",
    ]


def check_lines(checks: dict) -> list[str]:
    rows = [f"| {name} | {c['status']} | {', '.join(f'{s:.2f}' for s in c.get('step_s', [])) or '-'} |"
            for name, c in checks.items()]
    return ["| run | status | s per step |", "|---|---|---|", *rows, ""]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--config", choices=sorted(CONFIGS), default="qwen3-1.7b")
    p.add_argument("--runs", default="timing", help=f"comma-separated, in order, from {', '.join(RUNS)}")
    p.add_argument("--steps", type=int, default=3, help="optimizer steps per run, the first is warm-up in timing")
    p.add_argument("--rounds", type=int, default=1, help="alternating (TA-GRPO, GRPO) rounds")
    p.add_argument("--warmup", type=int, default=0, help="untimed (TA-GRPO, GRPO) rounds before the timed ones")
    p.add_argument("--questions", type=int, default=2, help="questions per step (32 completions each)")
    p.add_argument("--length", type=int, default=256, help="completion tokens, forced")
    p.add_argument("--run-timeout", type=int, default=420, help="seconds the zero3 launch may take")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--worker", choices=["zero3"], help=argparse.SUPPRESS)  # a rank of the zero3 run
    p.add_argument("--model-dir", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    on_gpu = torch.cuda.is_available()
    if args.worker:
        zero3_worker(args, on_gpu)
        return 0
    wanted = args.runs.split(",")
    if not wanted or any(r not in RUNS for r in wanted):
        p.error(f"--runs {args.runs!r}: a comma-separated list from {', '.join(RUNS)}")
    start = time.perf_counter()
    machine = {"platform": platform.platform(), "device": torch.cuda.get_device_name() if on_gpu else "cpu",
               "gpus": torch.cuda.device_count(), "torch": torch.__version__}
    result = {"command": " ".join(["python benchmarks/gpu_step.py", *(argv or sys.argv[1:])]), "machine": machine,
              "config": args.config, "questions": args.questions, "length": args.length, "checks": {}}
    with tempfile.TemporaryDirectory() as model_dir:
        result["parameters"] = build_model(args.config, model_dir, torch.bfloat16 if on_gpu else torch.float32)
        for name in wanted:
            if name == "timing":
                result.update(timing(model_dir, args, on_gpu))
            else:
                result["checks"][name] = CHECKS[name](model_dir, args, on_gpu)
                args.out.mkdir(parents=True, exist_ok=True)
                (args.out / "gpu_step.partial.json").write_text(json.dumps(result, indent=2))
    result["wall_s"] = time.perf_counter() - start
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "gpu_step.json").write_text(json.dumps(result, indent=2))
    lines = [
        "# TA-GRPO vs GRPO at equal completions, one device" if "runs" in result else "# TA-GRPO checks on a device",
        "",
        f"Command: `{result['command']}`. Machine: {machine}. Model: random {args.config} "
        f"({result['parameters'] / 1e9:.2f}B parameters). Wall {result['wall_s']:.0f} s.",
        "",
        *(timing_lines(result, args) if "runs" in result else []),
        *(check_lines(result["checks"]) if result["checks"] else []),
    ]
    (args.out / "gpu_step.md").write_text("\n".join(lines))
    (args.out / "gpu_step.partial.json").unlink(missing_ok=True)
    print("\n".join(lines))
    return 1 if any(c["status"].startswith("failed") for c in result["checks"].values()) else 0

if __name__ == "__main__":
    sys.exit(main())
