"""What an eval run's counts depend on, stored beside them so that no run is ever reported under another's name.

``fingerprint(cfg, benchmark)`` holds the model (path and a content hash), the benchmark and every sampling
setting. ``model_hash`` reads ``config.json``, any weights index and, of each weight file, its name, size and
first and last MiB: cheap on a 7B checkpoint, different for two checkpoints of one run. ``question_seed`` gives
each question its own sampling seed from its id, so a resumed run draws what an uninterrupted one would.
"""

from __future__ import annotations

import hashlib
import json
import os
import zlib

from tagrpo.common.errors import TagrpoError

FIELDS = ("model", "model_hash", "benchmark", "n", "temperature", "top_p", "max_new_tokens", "template",
          "chat_template", "seed")
_WEIGHTS = (".safetensors", ".bin", ".pt", ".gguf")


class FingerprintMismatch(TagrpoError):
    """An output directory holds counts of another run."""


def model_hash(model: str) -> str:
    if not os.path.isdir(model):
        return f"hub:{model}"
    digest = hashlib.sha256()
    for name in sorted(os.listdir(model)):
        path = os.path.join(model, name)
        if name == "config.json" or name.endswith(".index.json"):
            with open(path, "rb") as f:
                digest.update(name.encode() + f.read())
        elif name.endswith(_WEIGHTS):
            size = os.path.getsize(path)
            with open(path, "rb") as f:
                head = f.read(1 << 20)
                f.seek(max(0, size - (1 << 20)))
                digest.update(f"{name}:{size}".encode() + head + f.read())
    return digest.hexdigest()[:16]


def fingerprint(cfg, benchmark: str) -> dict:
    model = os.path.abspath(cfg.model) if os.path.isdir(cfg.model) else cfg.model
    return {"model": model, "model_hash": model_hash(cfg.model), "benchmark": benchmark, "n": cfg.n,
            "temperature": cfg.temperature, "top_p": cfg.top_p, "max_new_tokens": cfg.max_new_tokens,
            "template": cfg.template, "chat_template": cfg.chat_template, "seed": cfg.seed}


def claim(directory: str, current: dict, has_counts: bool, fields=FIELDS) -> None:
    """Write ``current`` as the directory's fingerprint, or check its ``fields`` against the stored one's."""
    path = os.path.join(directory, "fingerprint.json")
    stored = None
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            stored = json.load(f)
    if has_counts and stored is None:
        raise FingerprintMismatch(f"{directory} holds counts without a fingerprint (an older tagrpo or another "
                                  "tool); pass --overwrite to start again")
    if stored is not None and has_counts:
        diff = [f"{k} ({stored.get(k)!r} vs {current[k]!r})" for k in fields if stored.get(k) != current[k]]
        if diff:
            raise FingerprintMismatch(f"{directory} holds counts of another run: {', '.join(diff)}; pass "
                                      "--overwrite to start again")
        return
    os.makedirs(directory, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(current, f, indent=2)


def question_seed(seed: int, question_id) -> int:
    return zlib.crc32(f"{seed}:{question_id}".encode()) % (2**31)
