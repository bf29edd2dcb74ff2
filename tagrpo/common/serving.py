"""A local server that a script starts itself (``transformers serve``, ``trl vllm-serve``, torchrun's rendezvous):
a free port for it, and the wait until it answers."""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.request


def free_port() -> int:
    """A TCP port free on this machine now (two launches side by side must not both take a fixed one)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(url: str, proc: subprocess.Popen, timeout_s: float, poll_s: float = 1.0) -> str | None:
    """Poll ``url``'s ``/health`` until it answers 200, while ``proc`` (the server) runs: None once it does, else why
    not as a phrase for the caller's own error ("exited with 1", "did not answer /health in 180 s")."""
    deadline = time.monotonic() + timeout_s
    while True:
        if proc.poll() is not None:
            return f"exited with {proc.returncode}"
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=5) as reply:
                if reply.status == 200:
                    return None
        except OSError:  # refused while it starts; an HTTP error status is an OSError too
            pass
        if time.monotonic() > deadline:
            return f"did not answer /health in {timeout_s:g} s"
        time.sleep(poll_s)
