"""Fixtures for the policy tests (helpers live in policy_fixtures.py)."""

import pytest
import torch
from policy_fixtures import stats_of, synthetic_windows


@pytest.fixture(autouse=True)
def _one_thread():
    """The test machine is shared; keep torch to one thread."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.fixture
def windows():
    return synthetic_windows()


@pytest.fixture
def stats(windows):
    return stats_of(windows)
