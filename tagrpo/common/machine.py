"""What a measurement ran on: one record every study, benchmark and tool writes beside its numbers."""

from __future__ import annotations

import os
import platform
import sys
from importlib import metadata
from pathlib import Path


def machine(packages: tuple[str, ...] = ("torch", "transformers", "trl")) -> dict:
    """Platform, Python, CPU count, the 1-minute load average, the installed versions of ``packages`` and whether
    bf16 is native here; with torch already imported, also its thread count and device (nothing heavy is imported
    here)."""
    info = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "cpu": cpu_model(),
        "load_average_1m": round(os.getloadavg()[0], 2),
    }
    for package in packages:
        try:
            info[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            info[package] = None
    if (torch := sys.modules.get("torch")) is not None:
        info["torch_threads"] = torch.get_num_threads()
        info["device"] = "cuda" if torch.cuda.is_available() else "cpu"
    info["native_bf16"] = native_bf16(info.get("device", "cpu"))  # else bf16 cells are emulated (tagrpo.common.bf16)
    return info


def cpu_model(cpuinfo: str = "/proc/cpuinfo") -> str:
    """The processor's model name (cells computed on two processors can differ in their last bits, so a study
    records where each invocation ran); ``platform.processor()`` where ``cpuinfo`` cannot be read."""
    try:
        with open(cpuinfo, encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def native_bf16(device: str) -> bool:
    """Whether bf16 autocast is native here: a GPU, or a CPU with AVX512-BF16 or AMX. On an AVX2-only CPU a bf16
    matmul measured 35x and 53x slower than fp32 (two AMD EPYC machines, torch 2.13)."""
    if device != "cpu":
        return True
    try:
        flags = Path("/proc/cpuinfo").read_text(encoding="utf-8").split()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags
