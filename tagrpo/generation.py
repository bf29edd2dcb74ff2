"""Transformers generation and model loading: the one place evaluation, rephrasing and the toy world call
``generate`` and ``from_pretrained``.

- :func:`load_tokenizer` / :func:`load_causal_lm`: a tokenizer whose pad token is its end-of-sequence token when
  it has none, and a causal LM in eval mode on the GPU when there is one (or on the device given);
- :func:`generate_batch`: one left-padded ``generate`` call, with the token counts of every completion;
- :func:`sample_responses`: ``n`` responses per prompt in batches, seeded without touching the caller's RNG.

Both take ``share_prompt_cache``: ``generate`` repeats each prompt ``n`` times before it runs the prompt through
the model (its ``num_return_sequences``), so ``n`` samples cost ``n`` prompt passes; with the option each prompt
runs once, all but its last token, and the key/value cache is repeated over the samples. The samples are the
same, drawn in the same order from the same random stream (``tests/test_eval.py``: equal on a tiny fp32 model;
in bf16 the logits may differ in the last bits); the prompt pass costs ``1/n``. Off by default.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from rich.progress import Progress


def load_tokenizer(path: str, padding_side: str | None = None):
    """The tokenizer at ``path``; its end-of-sequence token pads when it has no pad token."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path)
    if padding_side is not None:
        tokenizer.padding_side = padding_side
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def load_causal_lm(path: str, padding_side: str | None = None, device: str | None = None, **model_kwargs):
    """``(model, tokenizer)`` at ``path``: the model in eval mode on ``device`` (default: CUDA when available,
    else the CPU), ``model_kwargs`` passed to ``from_pretrained`` (e.g. ``dtype``); the tokenizer as
    :func:`load_tokenizer` gives it."""
    from transformers import AutoModelForCausalLM

    tokenizer = load_tokenizer(path, padding_side)
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    model = AutoModelForCausalLM.from_pretrained(path, **model_kwargs).to(device).eval()
    return model, tokenizer


def distinct_rows(ids: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(first, inverse)``: for the (R, P) prompts (left-padded ids and their mask), the (U,) index of each
    distinct (ids, mask) row's first occurrence and the (R,) index into them of every row, in order of first
    occurrence."""
    first: dict[tuple, int] = {}
    index, inverse = [], []
    for i, (row_ids, row_mask) in enumerate(zip(ids.tolist(), mask.tolist(), strict=True)):
        slot = first.setdefault((tuple(row_ids), tuple(row_mask)), len(first))
        if slot == len(index):
            index.append(i)
        inverse.append(slot)
    return torch.tensor(index, device=ids.device), torch.tensor(inverse, device=ids.device)  # (U,), (R,)


def prompt_cache(model, ids: torch.Tensor, mask: torch.Tensor, rows: torch.Tensor) -> tuple[str, object]:
    """``(keyword, cache)``: the key/value cache of the (U, P) left-padded prompts ``ids`` but their last column,
    each run once (positions numbered from the mask, as ``generate`` numbers them), then selected out to the rows
    ``rows`` (R,) index; ``keyword`` is the name under which ``generate`` and ``forward`` take it."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model  # a PEFT model's transformers one
    accepts = inspect.signature(type(base).forward).parameters
    name = "cache" if "cache" in accepts else "past_key_values"
    positions = None  # as generate numbers the prompt: from the mask where the model takes position ids
    if "position_ids" in accepts:
        positions = (mask.long().cumsum(-1) - 1).masked_fill(mask == 0, 0)[:, :-1]  # (U, P - 1)
    out = model(input_ids=ids[:, :-1], attention_mask=mask[:, :-1], position_ids=positions, use_cache=True)
    cache = getattr(out, name)
    cache.batch_select_indices(rows)
    return name, cache


def _prompt_cache(model, ids: torch.Tensor, mask: torch.Tensor, copies: int) -> dict:
    """``generate``'s inputs for ``copies`` samples of each left-padded prompt with the prompt (but its last token)
    run once: the ids and mask repeated, and the key/value cache repeated over the copies."""
    rows = torch.arange(ids.size(0), device=ids.device).repeat_interleave(copies)  # (B * copies,)
    name, cache = prompt_cache(model, ids, mask, rows)
    return {"input_ids": ids[rows], "attention_mask": mask[rows], name: cache}


@dataclass
class PrefixCache:
    """What :func:`shared_prefix_cache` built for U prompts: the ``keyword`` under which ``forward`` and
    ``generate`` take the ``cache``; the cached columns' (U, C) ``ids`` and ``mask`` (the common prefix, then each
    prompt's rest but its last token, left-padded); each prompt's (U,) ``last`` token and (U,) ``length``."""

    keyword: str
    cache: object
    ids: torch.Tensor
    mask: torch.Tensor
    last: torch.Tensor
    length: torch.Tensor

    def select(self, rows: torch.Tensor) -> PrefixCache:
        """The cache and its columns for the (R,) ``rows`` (indices into the U prompts)."""
        self.cache.batch_select_indices(rows)
        return PrefixCache(self.keyword, self.cache, self.ids[rows], self.mask[rows], self.last[rows],
                           self.length[rows])


def shared_prefix_cache(model, ids: torch.Tensor, mask: torch.Tensor) -> PrefixCache | None:
    """The key/value cache of U left-padded prompts (U, P) but their last tokens, with the tokens that begin every
    prompt run once (batch 1) and each prompt's rest once, after it. Every token keeps its position in its own
    prompt (0 for its first real token, as ``generate`` numbers them), so that attention, which depends on the
    relative positions under rotary embeddings (Llama, Qwen, Mistral, ...), sees what it sees in the padded
    prompt. Gradients flow when enabled. None when every prompt is one token long (nothing to cache)."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model  # a PEFT model's transformers one
    keyword = "cache" if "cache" in inspect.signature(type(base).forward).parameters else "past_key_values"
    length = mask.sum(1)  # (U,)
    tokens = [row[row.size(0) - n :] for row, n in zip(ids, length.tolist(), strict=True)]
    common = int(length.min()) - 1
    for i in range(1, len(tokens)):
        same = (tokens[i][:common] == tokens[0][:common]).long()  # (common,)
        common = int(same.cumprod(0).sum())
    rests = [t[common:-1] for t in tokens]
    width = max(r.numel() for r in rests)
    if common + width == 0:
        return None
    cache, rows = None, ids.size(0)
    if common:
        prefix = tokens[0][:common].unsqueeze(0)  # (1, c)
        cache = getattr(model(input_ids=prefix, use_cache=True, logits_to_keep=1), keyword)
        cache.batch_repeat_interleave(rows)
    rest_ids = ids.new_zeros(rows, width)  # (U, w) left-padded
    rest_mask = mask.new_zeros(rows, width)  # (U, w)
    for i, r in enumerate(rests):
        if r.numel():
            rest_ids[i, width - r.numel() :], rest_mask[i, width - r.numel() :] = r, 1
    cached_mask = torch.cat([mask.new_ones(rows, common), rest_mask], 1)  # (U, C)
    if width:
        positions = (common + rest_mask.cumsum(1) - 1).clamp(min=0)  # (U, w): each token's place in its prompt
        out = model(input_ids=rest_ids, attention_mask=cached_mask, position_ids=positions, use_cache=True,
                    logits_to_keep=1, **({keyword: cache} if cache is not None else {}))
        cache = getattr(out, keyword)
    cached_ids = torch.cat([tokens[0][:common].expand(rows, common), rest_ids], 1)  # (U, C)
    last = torch.stack([t[-1] for t in tokens])  # (U,)
    return PrefixCache(keyword, cache, cached_ids, cached_mask, last, length)


@contextmanager
def shared_prompt_generation(model):
    """Inside the block, ``model.generate(input_ids=..., attention_mask=..., ...)`` (text only, no cache given)
    runs the tokens every distinct prompt row begins with once, then each distinct prompt's rest once, all but its
    last token (:func:`shared_prefix_cache`), and generates every row from its copy of that key/value cache: the
    same samples from the same random stream, with the prompt pass over what differs only. It returns what
    ``generate`` would: the (R, P) prompt ids given, then the new tokens. Other calls are ``generate``'s own."""
    original = model.__dict__.get("generate")
    plain = model.generate

    def generate(*args, input_ids=None, attention_mask=None, **kwargs):
        tensors = [k for k, v in kwargs.items() if isinstance(v, torch.Tensor)]
        built = None
        if not (args or tensors or input_ids is None or attention_mask is None or
                {"cache", "past_key_values"} & kwargs.keys()):
            first, inverse = distinct_rows(input_ids, attention_mask)  # (U,), (R,)
            built = shared_prefix_cache(model, input_ids[first], attention_mask[first])
        if built is None:
            return plain(*args, input_ids=input_ids, attention_mask=attention_mask, **kwargs)
        rows = built.select(inverse)
        ids = torch.cat([rows.ids, rows.last.unsqueeze(1)], 1)  # (R, C + 1)
        mask = torch.cat([rows.mask, rows.mask.new_ones(ids.size(0), 1)], 1)  # (R, C + 1)
        out = plain(input_ids=ids, attention_mask=mask, **{rows.keyword: rows.cache}, **kwargs)  # (R, C + 1 + T)
        return torch.cat([input_ids, out[:, ids.size(1) :]], 1)  # (R, P + T)

    model.generate = generate
    try:
        yield
    finally:
        if original is None:
            del model.generate
        else:
            model.generate = original


@torch.no_grad()
def generate_batch(
    model, tokenizer, prompts: Sequence[str], n: int = 1, temperature: float = 1.0, top_p: float = 1.0,
    max_new_tokens: int = 64, share_prompt_cache: bool = False,
) -> list[list[tuple[str, int, int]]]:
    """One left-padded ``generate`` call: per prompt, ``n`` ``(text, prompt tokens, completion tokens)``.

    ``temperature=0`` decodes greedily (every sample of a prompt is then the same). The completion ends at the
    first end-of-sequence or pad token, which the text leaves out. ``share_prompt_cache``: each prompt runs through
    the model once for its ``n`` samples (the module's docstring). This is the one transformers generation wrapper
    of the project (evaluation, the demo and the transformers rephrase backend).
    """
    enc = tokenizer(list(prompts), return_tensors="pt", padding=True, padding_side="left").to(model.device)
    sampling = {"do_sample": False, "temperature": None, "top_p": None, "top_k": None}
    drawn = 1  # greedy: one decode per prompt, repeated n times
    if temperature > 0:
        sampling, drawn = {"do_sample": True, "temperature": temperature, "top_p": top_p, "top_k": 0}, n
    inputs, copies = dict(enc), drawn
    if share_prompt_cache and drawn > 1 and enc["input_ids"].size(1) > 1:
        inputs, copies = _prompt_cache(model, enc["input_ids"], enc["attention_mask"], drawn), 1
    generated = model.generate(
        **inputs, **sampling, max_new_tokens=max_new_tokens, num_return_sequences=copies,
        pad_token_id=tokenizer.pad_token_id,
    )  # (len(prompts) * drawn, P + T)
    new = generated[:, enc["input_ids"].size(1) :].tolist()  # (len(prompts) * drawn, T)
    new = [row for i in range(len(prompts)) for row in new[i * drawn : (i + 1) * drawn] * (n // drawn)]
    stops = {tokenizer.pad_token_id, tokenizer.eos_token_id}
    out = []
    for i, used in enumerate(enc["attention_mask"].sum(1).tolist()):
        rows = []
        for row in new[i * n : (i + 1) * n]:
            length = next((j for j, t in enumerate(row) if t in stops), len(row))
            rows.append((tokenizer.decode(row[:length], skip_special_tokens=True), int(used), length))
        out.append(rows)
    return out


def sample_responses(
    model,
    tokenizer,
    prompts: Sequence[str],
    n: int,
    temperature: float = 1.0,
    top_p: float = 1.0,
    max_new_tokens: int = 64,
    batch_size: int = 256,
    seed: int = 0,
    progress: bool = True,
    share_prompt_cache: bool = False,
) -> list[list[str]]:
    """``n`` sampled responses to each prompt, as a list (per prompt) of lists (per sample) of strings.

    Prompts are generated in batches of about ``batch_size`` rows (prompts x samples) by ``generate_batch``,
    after one ``torch.manual_seed(seed)`` inside a forked RNG state: the caller's random state (a training run
    that evaluates mid-way) is the same afterwards. ``temperature=0`` decodes greedily. ``share_prompt_cache``: each
    prompt runs through the model once for its ``n`` samples (the module's docstring).
    """
    was_training = model.training
    model.eval()
    per_batch = max(1, batch_size // n)
    out: list[list[str]] = []
    cuda_devices = list(range(torch.cuda.device_count())) if torch.cuda.is_available() else []
    with torch.random.fork_rng(devices=cuda_devices), Progress(transient=True, disable=not progress) as bar:
        torch.manual_seed(seed)
        task = bar.add_task(f"sampling {n} per prompt", total=len(prompts))
        for start in range(0, len(prompts), per_batch):
            chunk = list(prompts[start : start + per_batch])
            batch = generate_batch(model, tokenizer, chunk, n, temperature, top_p, max_new_tokens, share_prompt_cache)
            out.extend([text for text, _, _ in rows] for rows in batch)
            bar.update(task, advance=len(chunk))
    model.train(was_training)
    return out
