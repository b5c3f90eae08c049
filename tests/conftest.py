"""Fixtures shared by the test modules."""

import pytest
import torch


@pytest.fixture
def one_thread():
    """Run a test on one torch thread, restoring the previous count afterwards."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
