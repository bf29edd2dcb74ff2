"""Generation engines for evaluation: vLLM when it is installed and a GPU is present, else transformers.

Either reads a PEFT adapter directory (what ``tagrpo train use_peft=true`` saves: ``final/`` or a ``checkpoint-*``)
as its base model with the adapter merged into the weights (``load_merged_adapter``): the same model a separately
merged and saved copy is, so the same samples and pass@k (``tests/test_lora.py``). vLLM loads from a directory, so
its engine first writes the merged model to a temporary one (deleted with the engine; not run on a GPU yet).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence

from tagrpo.common.errors import InputError
from tagrpo.common.modes import check_mode
from tagrpo.models import adapter_base

# torch and tagrpo.generation load when an engine is made, not with ENGINES (what the commands' help reads)

ENGINES = ("auto", "vllm", "transformers")


def vllm_available() -> bool:
    try:
        import vllm  # noqa: F401
    except ImportError:
        return False
    import torch

    return torch.cuda.is_available()


class TransformersEngine:
    """Batched ``generate`` with transformers (CPU or GPU)."""

    def __init__(self, model_path: str, batch_size: int = 256, dtype: str = "auto"):
        from tagrpo.generation import load_causal_lm

        if adapter_base(model_path) is None:
            self.model, self.tokenizer = load_causal_lm(model_path, dtype=dtype)
        else:
            self.model, self.tokenizer = load_merged_adapter(model_path, dtype=dtype)
        self.batch_size = batch_size

    def generate(
        self, prompts: Sequence[str], n: int, temperature: float, top_p: float, max_new_tokens: int, seeds
    ) -> list[list[str]]:
        """``n`` responses per prompt; ``seeds`` (one per prompt, or one int for all) seed each prompt's samples,
        so a prompt's responses do not depend on its neighbours in the batch (one ``generate`` per prompt)."""
        from tagrpo.generation import sample_responses

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
        from tagrpo.generation import sample_responses

        return sample_responses(
            self.model, self.tokenizer, list(prompts), n, temperature=temperature, top_p=top_p,
            max_new_tokens=max_new_tokens, batch_size=self.batch_size, seed=seed, progress=False,
        )


class VLLMEngine:
    """vLLM offline inference; one ``SamplingParams(n=...)`` request per prompt."""

    def __init__(self, model_path: str, gpu_memory_utilization: float = 0.9):
        from vllm import LLM

        self._merged = None
        if adapter_base(model_path) is not None:
            self._merged = tempfile.TemporaryDirectory(prefix="tagrpo-merged-")
            model, tokenizer = load_merged_adapter(model_path, device="cpu", dtype="auto")
            model.save_pretrained(self._merged.name)
            tokenizer.save_pretrained(self._merged.name)
            model_path = self._merged.name
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


def load_merged_adapter(path: str, device: str | None = None, dtype: str = "auto"):
    """``(model, tokenizer)`` of the PEFT adapter directory ``path``: its base (``tagrpo.models.adapter_base``) loaded
    as ``load_causal_lm`` loads a model, the adapter merged into its weights; the tokenizer saved with the adapter,
    else the base's."""
    from tagrpo.generation import load_causal_lm, load_tokenizer

    try:
        from peft import PeftModel
    except ImportError as err:
        raise InputError(f"model {path!r} is a LoRA adapter; loading it needs peft: pip install 'tagrpo[peft]'"
                         ) from err
    base = adapter_base(path)
    model, tokenizer = load_causal_lm(base, device=device, dtype=dtype)
    if os.path.exists(os.path.join(path, "tokenizer_config.json")):
        tokenizer = load_tokenizer(path)
    merged = PeftModel.from_pretrained(model, path).merge_and_unload()
    return merged.eval(), tokenizer


def make_engine(name: str, model_path: str, batch_size: int = 256):
    """``auto`` picks vLLM when it is installed and a GPU is present, transformers otherwise."""
    check_mode("engine", name, ENGINES)
    if name == "vllm" or (name == "auto" and vllm_available()):
        return VLLMEngine(model_path)
    return TransformersEngine(model_path, batch_size=batch_size)
