"""What a measurement ran on: one record every study, benchmark and tool writes beside its numbers."""

from __future__ import annotations

import os
import platform
import sys
from importlib import metadata


def machine(packages: tuple[str, ...] = ("torch", "transformers", "trl")) -> dict:
    """Platform, Python, CPU count, the 1-minute load average and the installed versions of ``packages``; with
    torch already imported, also its thread count and device (nothing heavy is imported here)."""
    info = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
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
    return info
