"""Expansion of original questions into their N+1 variant prompts, inside the training step.

verl samples a batch of B original questions, gives each a fresh ``uid`` and repeats every prompt ``rollout.n``
(= G) times in consecutive rows. :func:`expand_dataproto` runs between the two: each question becomes N+1
consecutive prompt rows ``q0, q1..qN`` whose ``uid`` is ``"{question uid}#v{n}"``, so after verl's repeat a
question's (N+1)*G rows are contiguous, and whatever verl does to the row order later (batch balancing,
mini-batch shuffling) the pool and the variant of every row can be read back from its uid
(:func:`split_uid`). Pools are formed inside the step from the sampled questions, so the data loader may shuffle.

Only the ``uid`` reaches an advantage estimator in verl, which is why the variant lives in it. The rows also carry
``tagrpo_variant`` (int) and ``tagrpo_qid`` (the original id, for logs). Nothing here imports verl.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from itertools import cycle, islice
from typing import Any

import numpy as np

from tagrpo.common.modes import check_mode

EXPAND_RULES = ("fill_original", "cycle")
UID_SEPARATOR = "#v"
_UID = re.compile(r"^(.*)#v(\d+)$", re.DOTALL)


def variant_uid(question_uid: str, variant: int) -> str:
    """The uid of variant ``variant`` of the question whose per-step uid is ``question_uid``."""
    return f"{question_uid}{UID_SEPARATOR}{int(variant)}"


def split_uid(uid: Any) -> tuple[str, int]:
    """``(pool key, variant)`` of a row's uid; a uid without the ``#v{n}`` suffix is its own pool, variant 0."""
    match = _UID.match(str(uid))
    if match is None:
        return str(uid), 0
    return match.group(1), int(match.group(2))


def fit_variants(original: Any, rephrasings: Sequence[Any] | None, num_rephrasings: int, short: str) -> list[Any]:
    """``[q0, q1..qN]``: the first N rephrasings; a short list is padded with q0 (``fill_original``) or by
    repeating its rephrasings (``cycle``, q0 when there are none). The same rule as ``tagrpo.data.fit_rephrasings``."""
    check_mode("short_rephrasings", short, EXPAND_RULES)
    if num_rephrasings < 0:
        raise ValueError(f"num_rephrasings must be >= 0, got {num_rephrasings}")
    available = list(rephrasings or [])[:num_rephrasings]
    missing = num_rephrasings - len(available)
    if missing > 0:
        fill = list(islice(cycle(available), missing)) if short == "cycle" and available else [original] * missing
        available += fill
    return [original, *available]


def as_messages(prompt: Any, like: Any) -> Any:
    """A rephrasing in the form of the original prompt: a bare string becomes ``like``'s chat list with the text
    as its last message's content; chat lists are returned as they are (copied)."""
    if isinstance(prompt, str) and isinstance(like, (list, tuple)) and like and isinstance(like[-1], dict):
        messages = copy.deepcopy(list(like))
        messages[-1] = {**messages[-1], "content": prompt}
        return messages
    return copy.deepcopy(prompt) if isinstance(prompt, (list, dict)) else prompt


def expand_prompts(
    prompts: Sequence[Any],
    rephrasings: Sequence[Sequence[Any] | None],
    uids: Sequence[str],
    num_rephrasings: int,
    short: str = "fill_original",
) -> tuple[list[Any], list[str], list[int], list[int]]:
    """Expand B questions into B*(N+1) prompt rows, question-major: rows ``b*(N+1) .. b*(N+1)+N``.

    Args:
        prompts: (B,) each question's q0 prompt (a chat message list, as verl's ``raw_prompt``, or text).
        rephrasings: (B,) each question's rephrasings (chat lists or texts; texts take q0's chat form).
        uids: (B,) verl's per-step uid of each question.
        num_rephrasings: N.
        short: see :func:`fit_variants`.

    Returns:
        ``(prompts, uids, variants, source)``, each (B*(N+1),): the variant prompt, its uid
        (:func:`variant_uid`), the variant n, and the question row b it was expanded from.
    """
    if not len(prompts) == len(rephrasings) == len(uids):
        raise ValueError(
            f"prompts, rephrasings and uids differ in length: {len(prompts)}, {len(rephrasings)}, {len(uids)}"
        )
    out_prompts, out_uids, variants, source = [], [], [], []
    for b, (prompt, reph, uid) in enumerate(zip(prompts, rephrasings, uids, strict=True)):
        for n, variant in enumerate(fit_variants(prompt, reph, num_rephrasings, short)):
            out_prompts.append(as_messages(variant, prompt) if n else variant)
            out_uids.append(variant_uid(uid, n))
            variants.append(n)
            source.append(b)
    return out_prompts, out_uids, variants, source


def check_pools(uids: Sequence[Any], pool_size: int | None = None) -> dict[str, list[int]]:
    """Row indices of every pool, keyed by pool; raises ValueError when a pool's variants differ in size (a pool
    split or cut short) or, with ``pool_size``, when a pool does not hold exactly ``pool_size`` rows."""
    pools: dict[str, list[int]] = {}
    counts: dict[str, dict[int, int]] = {}
    for i, uid in enumerate(uids):
        key, variant = split_uid(uid)
        pools.setdefault(key, []).append(i)
        per_variant = counts.setdefault(key, {})
        per_variant[variant] = per_variant.get(variant, 0) + 1
    for key, per_variant in counts.items():
        sizes = set(per_variant.values())
        if len(sizes) != 1 or set(per_variant) != set(range(len(per_variant))):
            raise ValueError(f"pool {key!r} is not whole: rows per variant {dict(sorted(per_variant.items()))}")
        if pool_size is not None and len(pools[key]) != pool_size:
            raise ValueError(f"pool {key!r} has {len(pools[key])} rows, expected {pool_size}")
    return pools


def _objects(values: Sequence[Any]) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    for i, value in enumerate(values):  # element-wise: a list of lists must not become a 2-D array
        out[i] = value
    return out


def _rephrasings_of(extra_info: Any) -> list[Any]:
    if isinstance(extra_info, dict):
        return list(extra_info.get("rephrasings") or [])
    return []


def expand_dataproto(batch, num_rephrasings: int, short: str = "fill_original", prompt_key: str = "raw_prompt"):
    """Return ``batch`` (a verl ``DataProto`` of B questions, one uid each) expanded to B*(N+1) prompt rows.

    Tensors and non-tensor fields are repeated per question; ``prompt_key`` gets each variant's prompt
    (rephrasings from ``extra_info["rephrasings"]``), ``uid`` the variant uid, and the new non-tensor fields
    ``tagrpo_variant`` and ``tagrpo_qid`` (``extra_info["original_id"]``, else ``extra_info["index"]``, else the uid).
    """
    nt = batch.non_tensor_batch
    if "uid" not in nt or prompt_key not in nt:
        raise KeyError(f"expansion needs the non-tensor fields 'uid' and {prompt_key!r}; have {sorted(nt)}")
    infos = list(nt["extra_info"]) if "extra_info" in nt else [None] * len(nt["uid"])
    prompts, uids, variants, source = expand_prompts(
        list(nt[prompt_key]), [_rephrasings_of(info) for info in infos], list(nt["uid"]), num_rephrasings, short
    )
    qids = []
    for info, uid in zip(infos, nt["uid"], strict=True):
        info = info if isinstance(info, dict) else {}
        qids.append(str(info.get("original_id", info.get("index", uid))))
    expanded = batch.repeat(repeat_times=num_rephrasings + 1, interleave=True)
    expanded.non_tensor_batch[prompt_key] = _objects(prompts)
    expanded.non_tensor_batch["uid"] = _objects(uids)
    expanded.non_tensor_batch["tagrpo_variant"] = np.asarray(variants, dtype=np.int64)
    expanded.non_tensor_batch["tagrpo_qid"] = _objects([qids[b] for b in source])
    return expanded
