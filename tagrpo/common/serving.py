"""A local server that a script starts itself (``transformers serve``, ``trl vllm-serve``, torchrun's rendezvous):
a free port for it, and the wait until it answers."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
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


def start_transformers_serve(model: str, port: int, log: str, timeout_s: float = 300) -> subprocess.Popen:
    """``transformers serve`` of ``model`` on 127.0.0.1:``port`` (fp32, its output in ``log``), once it answers
    ``/health``; raises RuntimeError (the server killed, its log named) when it exits or does not answer in time."""
    cmd = [os.path.join(os.path.dirname(sys.executable), "transformers"), "serve", "--host", "127.0.0.1",
           "--port", str(port), "--dtype", "float32", model]
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    if (why := wait_healthy(f"http://127.0.0.1:{port}", proc, timeout_s)) is None:
        return proc
    proc.kill()
    proc.wait()
    raise RuntimeError(f"transformers serve {why}; its log: {log}")


def stop_server(proc: subprocess.Popen, timeout_s: float = 30) -> None:
    """SIGTERM, then SIGKILL if it has not exited after ``timeout_s``."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
