"""Generation engines for evaluation: vLLM when it is installed and a GPU is present, else transformers."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from tagrpo.common.modes import check_mode
from tagrpo.generation import load_causal_lm, sample_responses

ENGINES = ("auto", "vllm", "transformers")


def vllm_available() -> bool:
    try:
        import vllm  # noqa: F401
    except ImportError:
        return False
    return torch.cuda.is_available()


class TransformersEngine:
    """Batched ``generate`` with transformers (CPU or GPU)."""

    def __init__(self, model_path: str, batch_size: int = 256, dtype: str = "auto"):
        self.model, self.tokenizer = load_causal_lm(model_path, dtype=dtype)
        self.batch_size = batch_size

    def generate(
        self, prompts: Sequence[str], n: int, temperature: float, top_p: float, max_new_tokens: int, seeds
    ) -> list[list[str]]:
        """``n`` responses per prompt; ``seeds`` (one per prompt, or one int for all) seed each prompt's samples,
        so a prompt's responses do not depend on its neighbours in the batch (one ``generate`` per prompt)."""
        seeds = [seeds] * len(prompts) if isinstance(seeds, int) else list(seeds)
        return [
            sample_responses(
                self.model, self.tokenizer, [prompt], n, temperature=temperature, top_p=top_p,
                max_new_tokens=max_new_tokens, batch_size=self.batch_size, seed=seed, progress=False,
            )[0]
            for prompt, seed in zip(prompts, seeds, strict=True)
        ]

    def generate_together(
        self, prompts: Sequence[str], n: int, temperature: float, top_p: float, max_new_tokens: int, seed: int
    ) -> list[list[str]]:
        """``n`` responses to each of ``prompts`` from as few ``generate`` calls as ``batch_size`` allows, after one
        seed: the samples depend on the group of prompts (a question and its rephrasings), not on the prompts of
        other groups."""
        return sample_responses(
            self.model, self.tokenizer, list(prompts), n, temperature=temperature, top_p=top_p,
            max_new_tokens=max_new_tokens, batch_size=self.batch_size, seed=seed, progress=False,
        )


class VLLMEngine:
    """vLLM offline inference; one ``SamplingParams(n=...)`` request per prompt."""

    def __init__(self, model_path: str, gpu_memory_utilization: float = 0.9):
        from vllm import LLM

        self.llm = LLM(model=model_path, gpu_memory_utilization=gpu_memory_utilization)
        self.tokenizer = self.llm.get_tokenizer()

    def generate(
        self, prompts: Sequence[str], n: int, temperature: float, top_p: float, max_new_tokens: int, seeds
    ) -> list[list[str]]:
        from vllm import SamplingParams

        seeds = [seeds] * len(prompts) if isinstance(seeds, int) else list(seeds)
        params = [
            SamplingParams(n=n, temperature=temperature, top_p=top_p, max_tokens=max_new_tokens, seed=seed)
            for seed in seeds
        ]
        outputs = self.llm.generate(list(prompts), params, use_tqdm=False)
        return [[c.text for c in out.outputs] for out in outputs]

    def generate_together(
        self, prompts: Sequence[str], n: int, temperature: float, top_p: float, max_new_tokens: int, seed: int
    ) -> list[list[str]]:
        """One request for the group, each prompt seeded from ``seed`` and its position in the group."""
        return self.generate(prompts, n, temperature, top_p, max_new_tokens, [seed + i for i in range(len(prompts))])


def make_engine(name: str, model_path: str, batch_size: int = 256):
    """``auto`` picks vLLM when it is installed and a GPU is present, transformers otherwise."""
    check_mode("engine", name, ENGINES)
    if name == "vllm" or (name == "auto" and vllm_available()):
        return VLLMEngine(model_path)
    return TransformersEngine(model_path, batch_size=batch_size)
