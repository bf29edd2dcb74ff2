"""``tagrpo.common.serving``: a free port, and the wait for a server that answers, exits or never answers."""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap

from tagrpo.common.serving import free_port, wait_healthy

# a server that answers /health with 200 once it listens, and 404 elsewhere
SERVER = textwrap.dedent("""
    import http.server, sys

    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200 if self.path == "/health" else 404)
            self.end_headers()

        def log_message(self, *args):
            pass

    http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Health).serve_forever()
""")


def test_a_free_port_can_be_bound():
    with socket.socket() as s:
        s.bind(("127.0.0.1", free_port()))


def test_a_server_that_answers_is_healthy():
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-c", SERVER, str(port)])
    try:
        assert wait_healthy(f"http://127.0.0.1:{port}", proc, 60, poll_s=0.1) is None
    finally:
        proc.kill()
        proc.wait()


def test_a_server_that_exits_says_so_with_its_status():
    proc = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    proc.wait()
    assert wait_healthy(f"http://127.0.0.1:{free_port()}", proc, 60) == "exited with 3"


def test_a_server_that_never_answers_times_out():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])  # runs, listens nowhere
    try:
        why = wait_healthy(f"http://127.0.0.1:{free_port()}", proc, 0.3, poll_s=0.1)
        assert why == "did not answer /health in 0.3 s"
    finally:
        proc.kill()
        proc.wait()


def test_transformers_serve_is_started_with_its_arguments_and_stopped(tmp_path, monkeypatch):
    """A stand-in ``transformers`` beside the interpreter: it records its argv, then serves /health on --port."""
    import pytest

    from tagrpo.common.serving import start_transformers_serve, stop_server

    binary = tmp_path / "bin" / "transformers"
    binary.parent.mkdir()
    argv = tmp_path / "argv.txt"
    binary.write_text(f"#!{sys.executable}\nimport sys\nopen({str(argv)!r}, 'w').write(' '.join(sys.argv[1:]))\n"
                      + SERVER.replace("int(sys.argv[1])", "int(sys.argv[sys.argv.index('--port') + 1])"))
    binary.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(binary.parent / "python"))
    port = free_port()
    proc = start_transformers_serve("/models/m", port, str(tmp_path / "serve.log"), 60)
    try:
        assert argv.read_text() == f"serve --host 127.0.0.1 --port {port} --dtype float32 /models/m"
    finally:
        stop_server(proc, 5)
    assert proc.returncode is not None
    binary.write_text("#!/bin/sh\nexit 3\n")
    with pytest.raises(RuntimeError, match=r"transformers serve exited with 3; its log: .*serve.log"):
        start_transformers_serve("/models/m", free_port(), str(tmp_path / "serve.log"), 60)
