"""The ``gpu`` marker (skipped without CUDA by tests/conftest.py, never on a GPU) and tests/gpu_check.sh."""
import os
import subprocess
from pathlib import Path

import pytest
import torch

SCRIPT = Path(__file__).with_name("gpu_check.sh")


class _Item:
    """The two methods of a collected test item that the collection hook uses."""

    def __init__(self, *marks):
        self.own = [getattr(pytest.mark, m) for m in marks]
        self.added = []

    def get_closest_marker(self, name):
        return next((m for m in self.own + self.added if m.name == name), None)

    def add_marker(self, mark):
        self.added.append(mark.mark if hasattr(mark, "mark") else mark)


def _conftest(config):
    """tests/conftest.py as pytest loaded it (its hooks are the ones that ran at collection)."""
    path = Path(__file__).with_name("conftest.py").resolve()
    plugins = [p for p in config.pluginmanager.get_plugins() if getattr(p, "__file__", None)
               and Path(p.__file__).resolve() == path]
    assert len(plugins) == 1
    return plugins[0]


@pytest.mark.parametrize("cuda", [False, True])
def test_gpu_tests_are_skipped_exactly_when_cuda_is_missing(request, monkeypatch, cuda):
    """Without CUDA every gpu-marked item gets one skip mark saying why, and no other item gets any; with CUDA no
    item gets one (a gpu test must not be skipped silently on a GPU machine)."""
    conftest = _conftest(request.config)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    items = {"gpu": _Item("gpu"), "gpu+slow": _Item("slow", "gpu"), "plain": _Item(), "slow": _Item("slow")}
    conftest.pytest_collection_modifyitems(request.config, list(items.values()))
    for name, item in items.items():
        skipped = "gpu" in name and not cuda
        assert [m.name for m in item.added] == (["skip"] if skipped else [])
        if skipped:
            assert item.added[0].kwargs["reason"] == conftest.NO_CUDA
            assert "torch.cuda.is_available() is False" in conftest.NO_CUDA


def test_this_sessions_gpu_tests_were_skipped_only_without_cuda(request):
    """In the run this test is part of, each collected gpu test carries a skip mark iff CUDA is missing here."""
    gpu_items = [i for i in request.session.items if i.get_closest_marker("gpu") is not None]
    assert gpu_items  # at least test_cuda_is_there_when_gpu_tests_run, below
    for item in gpu_items:
        assert any(m.name == "skip" for m in item.iter_markers()) == (not torch.cuda.is_available())


def test_the_gpu_marker_is_registered(request):
    assert any(line.startswith("gpu:") for line in request.config.getini("markers"))


@pytest.mark.gpu
def test_cuda_is_there_when_gpu_tests_run():
    """Fails wherever a gpu test runs without a usable CUDA device (the skip did not happen)."""
    assert torch.cuda.is_available()
    x = torch.ones(8, device="cuda")
    assert (x @ x).item() == 8


def test_gpu_check_script_parses():
    subprocess.run(["bash", "-n", str(SCRIPT)], check=True)
    text = SCRIPT.read_text()
    assert text.startswith("#!/usr/bin/env bash") and "set -euo pipefail" in text
    assert os.access(SCRIPT, os.X_OK)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA: the script would run")
def test_gpu_check_script_refuses_without_cuda(tmp_path):
    """Without a CUDA device the script stops before any step (exit 2), says why, and writes no step log."""
    env = {**os.environ, "OUT": ""}
    env.pop("GPU_CHECK_WHEELS", None)
    r = subprocess.run(["bash", str(SCRIPT), str(tmp_path / "results")], capture_output=True, text=True, env=env,
                       timeout=120, cwd=tmp_path)
    assert r.returncode == 2
    assert "gpu_check: prerequisites: no CUDA device (torch.cuda.is_available() is False)" in r.stderr
    assert "Traceback" not in r.stderr + r.stdout
    assert sorted(p.name for p in (tmp_path / "results").iterdir()) == []


def test_gpu_check_script_refuses_an_empty_wheel_folder(tmp_path):
    """A GPU_CHECK_WHEELS folder without wheels is a clear prerequisite error, before anything else."""
    env = {**os.environ, "GPU_CHECK_WHEELS": str(tmp_path)}
    r = subprocess.run(["bash", str(SCRIPT), str(tmp_path / "results")], capture_output=True, text=True, env=env,
                       timeout=60)
    assert r.returncode == 2 and f"GPU_CHECK_WHEELS={tmp_path} holds no .whl files" in r.stderr

