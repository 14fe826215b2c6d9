"""Shared test setup: one torch thread (the CI machine has 2 shared cores)."""
import pytest
import torch


@pytest.fixture(scope="session", autouse=True)
def _one_torch_thread():
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)
